package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/internal/toolaudit"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
)

type installFlags struct {
	manifest   string
	signKey    string
	grantNew   bool
	replace    bool   // replace another tool installed under the same file name
	policyFile string // tests: instead of the configured one
	toolsDir   string // tests: instead of the configured one
}

// newToolsInstallCmd is `openhuman-core tools install`.
func newToolsInstallCmd() *cobra.Command {
	var f installFlags
	cmd := &cobra.Command{
		Use:   "install (FILE.wasm | DIR) [--manifest tool.toml] [--sign KEY]",
		Short: "Pack if needed, sign, copy into the tools folder and pin it in policy.toml, in one step",
		Long: `install puts a tool module in service, or updates one, in one step:

  0. given a folder made by ` + "`tools new`" + ` (or any folder with a build.sh), runs its
     build.sh and installs the one .wasm file in it;
  1. packs the manifest in when the module has none (--manifest, or tool.toml beside
     FILE.wasm), with the same checks as ` + "`tools pack`" + `;
  2. signs it with --sign KEY (a key from ` + "`tools keygen`" + `);
  3. audits it: a module that can never load (a forbidden import, a limit exceeded)
     is refused here, with the reasons;
  4. adds its pin to policy.toml (sha256, and grant = the capabilities its manifest
     requests), keeping an older pin of the same file for the moment;
  5. copies it into the tools folder atomically (a rename: never half a file);
  6. removes the older pin.

At every step the module on disk has a pin that admits it, so a running
` + "`openhuman-core mcp`" + ` (which watches the folder and policy.toml) keeps serving the
tool through an update and tells clients the list changed. An update that requests
a capability the old pin did not grant is refused unless --grant-new. The older
entry's allowed_agents, timeout_ms and memory_mib carry over to the new pin.

An update is a module serving one of the installed module's tools. A module
serving other tools under the same file name is refused unless --replace; then
the old pin, its agents and its limits are dropped, never carried over.`,
		Example: `  openhuman-core tools install hello            # the folder of tools new: build, then install
  openhuman-core tools install hello.wasm
  openhuman-core tools install build/notes.wasm --manifest notes.toml --sign ~/.config/openhuman/signing.key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log := setupLogging(cmd.ErrOrStderr())
			return runInstall(cmd.OutOrStdout(), log, args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.manifest, "manifest", "", "manifest to pack in (default: the module's own, else tool.toml beside it)")
	cmd.Flags().StringVar(&f.signKey, "sign", "", "sign the module with this private key (from `tools keygen`)")
	cmd.Flags().BoolVar(&f.grantNew, "grant-new", false, "grant capabilities the module's current pin does not")
	cmd.Flags().BoolVar(&f.replace, "replace", false, "replace another tool installed under the same file name (nothing of its pin carries over)")
	return cmd
}

func runInstall(out io.Writer, log *slog.Logger, file string, f installFlags) error {
	if f.policyFile == "" || f.toolsDir == "" {
		cfg, err := loadConfig(log)
		if err != nil {
			return err
		}
		if f.policyFile == "" {
			f.policyFile = cfg.Tools.Policy
		}
		if f.toolsDir == "" {
			f.toolsDir = cfg.Tools.Dir
		}
	}
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		if file, err = buildFolder(log, file); err != nil {
			return err
		}
	}
	mod, err := os.ReadFile(file)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("reading module: %w", err)}
	}
	parsed, err := wasmbin.Parse(mod)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s is not a valid WebAssembly module: %w", file, err)}
	}
	// 1. Pack when asked, or when the module carries no manifest.
	manifestFile := f.manifest
	if _, has := parsed.Custom(policy.ManifestSection); !has && manifestFile == "" {
		manifestFile = filepath.Join(filepath.Dir(file), "tool.toml")
		if _, err := os.Stat(manifestFile); err != nil {
			return fmt.Errorf("%s has no manifest and there is no tool.toml beside it; give --manifest FILE", file)
		}
	}
	if manifestFile != "" {
		if mod, err = packBytes(mod, parsed, manifestFile, file); err != nil {
			return err
		}
	}
	// 2. Sign.
	if f.signKey != "" {
		keyPEM, err := os.ReadFile(f.signKey)
		if err != nil {
			return fmt.Errorf("reading key: %w", err)
		}
		priv, err := signature.ParsePrivateKey(keyPEM)
		if err != nil {
			return fmt.Errorf("%s: %w", f.signKey, err)
		}
		if mod, err = signature.Sign(mod, priv); err != nil {
			return fmt.Errorf("signing %s: %w", file, err)
		}
	}
	name := filepath.Base(file)
	sha := fileSHA256(mod)
	man, err := policy.ReadManifestNamed(mod, name)
	if err != nil {
		return &exitError{code: toolaudit.ExitNeverLoadable, err: err}
	}
	polText, err := os.ReadFile(f.policyFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading policy %s: %w", f.policyFile, err)
	}
	pol, err := policy.Parse(polText, f.policyFile)
	if err != nil {
		return err
	}
	// The entry: the older pin of this file lends its agents and limits.
	entry := policy.ModuleEntry{File: name, SHA256: sha, Grant: slices.Clone(man.Capabilities)}
	var old *policy.ModuleEntry
	for i := range pol.Modules {
		if pol.Modules[i].File == name {
			old = &pol.Modules[i]
			break
		}
	}
	// A pin of this file name is another tool's unless the module it admits
	// serves one of this module's tools: then nothing carries over, and
	// replacing it takes --replace (issue 39, finding 9).
	if old != nil {
		same, was := sameTool(filepath.Join(f.toolsDir, name), man)
		if !same {
			if !f.replace {
				return &exitError{code: 2, err: fmt.Errorf("%s in %s holds another tool (%s), not %s: nothing was installed; pass --replace to replace it (its pin, agents and limits are not carried over), or install this module under another file name",
					name, f.toolsDir, was, strings.Join(toolNames(man), ", "))}
			}
			fmt.Fprintf(out, "replacing %s (%s): its pin, allowed_agents and limits are dropped, not carried over\n", name, was)
			old = nil
		}
	}
	if old != nil {
		entry.AllowedAgents, entry.TimeoutMS, entry.MemoryMiB = old.AllowedAgents, old.TimeoutMS, old.MemoryMiB
		var added []string
		for _, c := range man.Capabilities {
			if !slices.Contains(old.Grant, c) {
				added = append(added, c)
			}
		}
		if len(added) > 0 && !f.grantNew {
			return fmt.Errorf("%s now requests %s, which its current pin (%s, line %d) does not grant; review it (`openhuman-core tools audit --diff`) and pass --grant-new to grant it",
				name, strings.Join(added, ", "), f.policyFile, old.Line)
		}
	}
	// 3. Audit under the policy with the new pin: refuse what can never load.
	withPin := appendModuleEntry(polText, entry)
	pol2, err := policy.Parse(withPin, f.policyFile)
	if err != nil {
		return fmt.Errorf("the policy with the new pin does not parse (this is a bug): %w", err)
	}
	rep, _ := toolaudit.Audit(mod, toolaudit.Options{Name: name, Policy: pol2})
	if !rep.Verdict.WouldLoad {
		var b strings.Builder
		for _, r := range rep.Verdict.Reasons {
			fmt.Fprintf(&b, "\n  - %s", r)
		}
		code := rep.ExitCode()
		return &exitError{code: code, err: fmt.Errorf("%s would not load, so it was not installed:%s", name, b.String())}
	}
	dest := filepath.Join(f.toolsDir, name)
	if cur, err := os.ReadFile(dest); err == nil && bytes.Equal(cur, mod) && old != nil && old.SHA256 == sha {
		fmt.Fprintf(out, "%s is already installed (sha256 %s)\n", dest, sha)
		return nil
	}
	// 4. Pin it beside the older pin.
	if err := os.MkdirAll(filepath.Dir(f.policyFile), 0o700); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", f.policyFile, err)
	}
	polMode := fs.FileMode(0o600)
	if fi, err := os.Stat(f.policyFile); err == nil {
		polMode = fi.Mode().Perm()
	}
	alreadyPinned := slices.ContainsFunc(pol.Modules, func(e policy.ModuleEntry) bool { return e.File == name && e.SHA256 == sha })
	if !alreadyPinned {
		if err := writeFileAtomic(f.policyFile, withPin, polMode); err != nil {
			return fmt.Errorf("pinning %s: %w", name, err)
		}
	}
	// 5. Copy the module in.
	if err := os.MkdirAll(f.toolsDir, 0o755); err != nil {
		return fmt.Errorf("creating the tools folder %s: %w", f.toolsDir, err)
	}
	if err := writeModuleFile(dest, mod, 0o644); err != nil {
		return err
	}
	// 6. Drop the older pins of this file.
	cur, err := os.ReadFile(f.policyFile)
	if err != nil {
		return fmt.Errorf("reading policy %s: %w", f.policyFile, err)
	}
	pruned, removed := removeModuleEntries(cur, f.policyFile, func(e policy.ModuleEntry) bool { return e.File == name && e.SHA256 != sha })
	if removed > 0 {
		if _, err := policy.Parse(pruned, f.policyFile); err != nil {
			return fmt.Errorf("the policy without the older pin does not parse (this is a bug; %s still holds both pins): %w", f.policyFile, err)
		}
		if err := writeFileAtomic(f.policyFile, pruned, polMode); err != nil {
			return fmt.Errorf("removing the older pin of %s: %w", name, err)
		}
	}
	verb := "installed"
	if old != nil {
		verb = "updated"
	}
	tools := toolNames(man)
	grant := "nothing"
	if len(entry.Grant) > 0 {
		grant = strings.Join(entry.Grant, ", ")
	}
	fmt.Fprintf(out, "%s %s (tools %s)\nsha256 %s pinned in %s, granted %s\na running `openhuman-core mcp` serves it within about two seconds; try `openhuman-core tools call %s '{}'`\n",
		verb, dest, strings.Join(tools, ", "), sha, f.policyFile, grant, tools[0])
	return nil
}

// buildFolder runs dir/build.sh (its output goes to stderr) and returns the one
// .wasm file the folder then holds.
func buildFolder(log *slog.Logger, dir string) (string, error) {
	script := filepath.Join(dir, "build.sh")
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("%s is a folder without build.sh; give the .wasm file to install, or make the folder with `openhuman-core tools new`", dir)
	}
	cmd := exec.Command("sh", "build.sh")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	log.Debug("building", "dir", dir)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s failed: %w", script, err)
	}
	wasms, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if err != nil {
		return "", err
	}
	if len(wasms) != 1 {
		return "", fmt.Errorf("after %s, %s holds %d .wasm files (%s); give the one to install", script, dir, len(wasms), strings.Join(wasms, ", "))
	}
	return wasms[0], nil
}

// packBytes is `tools pack` in memory: it checks the manifest against the module
// and writes it into the module's manifest section (dropping a stale signature).
func packBytes(mod []byte, parsed *wasmbin.Module, manifestFile, modulePath string) ([]byte, error) {
	src, err := os.ReadFile(manifestFile)
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	man, err := policy.ParseManifest(src, manifestFile)
	if err != nil {
		return nil, err
	}
	if err := policy.CheckModule(parsed, man, man.Capabilities); err != nil {
		return nil, fmt.Errorf("%s does not match manifest %s: %w; change the manifest's capabilities/abi or rebuild the module", modulePath, manifestFile, err)
	}
	out, err := wasmbin.SetCustomSection(mod, policy.ManifestSection, src)
	if err != nil {
		return nil, fmt.Errorf("writing the manifest section: %w", err)
	}
	if _, signed := parsed.Custom(signature.SectionName); signed {
		if out, err = wasmbin.StripCustomSection(out, signature.SectionName); err != nil {
			return nil, fmt.Errorf("removing the old signature: %w", err)
		}
	}
	return out, nil
}

// appendModuleEntry returns the policy text with one [[module]] entry appended.
func appendModuleEntry(text []byte, e policy.ModuleEntry) []byte {
	var b bytes.Buffer
	b.Write(text)
	if len(text) > 0 && !bytes.HasSuffix(text, []byte("\n")) {
		b.WriteByte('\n')
	}
	if len(text) > 0 {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[[module]]  # written by `openhuman-core tools install`\nfile = %s\nsha256 = %q\ngrant = %s\n", strconv.Quote(e.File), e.SHA256, tomlList(e.Grant))
	if len(e.AllowedAgents) > 0 {
		fmt.Fprintf(&b, "allowed_agents = %s\n", tomlList(e.AllowedAgents))
	}
	if e.TimeoutMS > 0 {
		fmt.Fprintf(&b, "timeout_ms = %d\n", e.TimeoutMS)
	}
	if e.MemoryMiB > 0 {
		fmt.Fprintf(&b, "memory_mib = %d\n", e.MemoryMiB)
	}
	return b.Bytes()
}

func tomlList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// removeModuleEntries removes the [[module]] blocks whose entry drop matches,
// each from its header to the next table header (or the end), leaving the rest
// of the text — comments, other tables — as it was. It returns the new text and
// how many entries it removed.
func removeModuleEntries(text []byte, file string, drop func(policy.ModuleEntry) bool) ([]byte, int) {
	lines := strings.SplitAfter(string(text), "\n")
	isHeader := func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "[") }
	var out strings.Builder
	removed := 0
	for i := 0; i < len(lines); {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), "[[module]]") {
			out.WriteString(lines[i])
			i++
			continue
		}
		end := i + 1
		for end < len(lines) && !isHeader(lines[end]) {
			end++
		}
		block := strings.Join(lines[i:end], "")
		p, err := policy.Parse([]byte(block), file)
		if err == nil && len(p.Modules) == 1 && drop(p.Modules[0]) {
			removed++
		} else {
			out.WriteString(block)
		}
		i = end
	}
	return []byte(out.String()), removed
}

// toolNames are the tools a manifest serves.
func toolNames(man *policy.Manifest) []string {
	var out []string
	for _, t := range man.Tools {
		out = append(out, t.Name)
	}
	return out
}

// sameTool reports whether the module installed at path serves one of man's
// tools (an update of it), and names what it serves. A file that is missing
// or unreadable is not the same tool: its pin cannot be shown to be this
// tool's, so nothing carries over from it without --replace.
func sameTool(path string, man *policy.Manifest) (bool, string) {
	cur, err := readBounded(path, policy.MaxModuleBytes)
	if err != nil {
		return false, "a pin whose module cannot be read: " + err.Error()
	}
	was, err := policy.ReadManifestNamed(cur, filepath.Base(path))
	if err != nil {
		return false, "a module whose manifest cannot be read: " + err.Error()
	}
	names := toolNames(was)
	for _, n := range names {
		if slices.Contains(toolNames(man), n) {
			return true, strings.Join(names, ", ")
		}
	}
	return false, "tools " + strings.Join(names, ", ")
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte module limit", path, fi.Size(), limit)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}
