package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

type packFlags struct {
	manifest string
	out      string
}

// newToolsCmd is `openhuman-core tools` and its subcommands.
func newToolsCmd() *cobra.Command {
	toolsCmd := &cobra.Command{
		Use:   "tools",
		Short: "Pack, inspect, sign and manage tool modules",
		Long: `Tool modules are WebAssembly files carrying their TOML manifest in an
	"openhuman.manifest" custom section. Third-party modules live in the tools directory
	(default ~/.openhuman/tools/) and load only when policy.toml pins their sha256 and
	grants what their manifest asks for.`,
		// Runnable, so that an unknown subcommand is a usage error (exit 2), not help.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var f packFlags
	pack := &cobra.Command{
		Use:   "pack MODULE.wasm --manifest tool.toml -o OUT.wasm",
		Short: "Write a tool manifest into a module (replacing any existing one) and print the result's sha256",
		Long: `pack validates a TOML manifest (abi, capabilities, tool names, JSON Schemas), checks that
the module's imports and exports are consistent with the manifest's ABI and requested
capabilities (the same static gate the runtime applies), and writes OUT.wasm with the
manifest in its "openhuman.manifest" custom section, replacing an existing manifest.
A signature section is dropped, since the new bytes invalidate it: sign OUT.wasm again.
It prints the sha256 to pin in policy.toml.`,
		Example: `  openhuman-core tools pack timeline.wasm --manifest tool.toml -o timeline.packed.wasm`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPack(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f)
		},
	}
	pack.Flags().StringVar(&f.manifest, "manifest", "", "TOML manifest file (required)")
	pack.Flags().StringVarP(&f.out, "output", "o", "", "output module file (required; may equal MODULE.wasm)")
	_ = pack.MarkFlagRequired("manifest")
	_ = pack.MarkFlagRequired("output")
	toolsCmd.AddCommand(pack, newToolsAuditCmd(), newToolsCallCmd(), newToolsInstallCmd(), newToolsListCmd(), newToolsNewCmd())
	toolsCmd.AddCommand(newToolsSignCmds()...)
	return toolsCmd
}

func runPack(stdout, stderr io.Writer, modulePath string, f packFlags) error {
	mod, err := os.ReadFile(modulePath)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("reading module: %w", err)}
	}
	parsed, err := wasmbin.Parse(mod)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s is not a valid WebAssembly module: %w", modulePath, err)}
	}
	src, err := os.ReadFile(f.manifest)
	if err != nil {
		return fmt.Errorf("reading manifest: %w", err)
	}
	man, err := policy.ParseManifest(src, f.manifest)
	if err != nil {
		return err
	}
	if err := policy.CheckModule(parsed, man, man.Capabilities); err != nil {
		return fmt.Errorf("%s does not match manifest %s: %w; change the manifest's capabilities/abi or rebuild the module", modulePath, f.manifest, err)
	}
	out, err := wasmbin.SetCustomSection(mod, policy.ManifestSection, src)
	if err != nil {
		return fmt.Errorf("writing the manifest section: %w", err)
	}
	if _, signed := parsed.Custom(signature.SectionName); signed {
		if out, err = wasmbin.StripCustomSection(out, signature.SectionName); err != nil {
			return fmt.Errorf("removing the old signature: %w", err)
		}
		fmt.Fprintf(stderr, "note: removed the signature of %s (it no longer matches); sign %s again with `openhuman-core tools sign`\n", modulePath, f.out)
	}
	if err := writeModuleFile(f.out, out, 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(out)
	fmt.Fprintf(stdout, "%s  %s\n", hex.EncodeToString(sum[:]), f.out)
	return nil
}

// writeModuleFile writes data to a temporary file beside path and renames it into place.
func writeModuleFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
