package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/openhuman/openhuman-core/internal/signature"
)

// newToolsSignCmds are `openhuman-core tools keygen` and `tools sign`.
func newToolsSignCmds() []*cobra.Command {
	var keyOut string
	var force bool
	keygen := &cobra.Command{
		Use:   "keygen",
		Short: "Make an ed25519 key pair for signing tool modules",
		Long: `keygen writes a new ed25519 private key (PKCS#8 PEM, mode 0600) to KEYFILE and its
public key to KEYFILE.pub, and prints the public key in the form policy.toml's
[trust] keys takes: ed25519:<base64>.`,
		Example: `  openhuman-core tools keygen -o ~/.config/openhuman/signing.key`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKeygen(cmd.OutOrStdout(), keyOut, force)
		},
	}
	keygen.Flags().StringVarP(&keyOut, "output", "o", "openhuman-signing.key", "private key file to write (the public key goes to FILE.pub)")
	keygen.Flags().BoolVar(&force, "force", false, "overwrite an existing key file")

	var keyFile, out string
	sign := &cobra.Command{
		Use:   "sign FILE.wasm --key KEYFILE",
		Short: "Sign a packed tool module with an ed25519 key",
		Long: `sign adds (or replaces) an openhuman.signature custom section holding an ed25519
signature over the module bytes without that section: code, data and the packed
manifest are all covered, so pack first, then sign. The module is rewritten in place
unless -o is given.`,
		Example: `  openhuman-core tools pack timeline.wasm --manifest tool.toml -o timeline.packed.wasm
  openhuman-core tools sign timeline.packed.wasm --key ~/.config/openhuman/signing.key -o timeline.signed.wasm
  openhuman-core tools sign timeline.packed.wasm --key ~/.config/openhuman/signing.key   # in place`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSign(cmd.OutOrStdout(), args[0], keyFile, out)
		},
	}
	sign.Flags().StringVar(&keyFile, "key", "", "private key file written by `tools keygen` (required)")
	sign.Flags().StringVarP(&out, "output", "o", "", "write the signed module here instead of replacing FILE.wasm")
	_ = sign.MarkFlagRequired("key")
	return []*cobra.Command{keygen, sign}
}

func runKeygen(out io.Writer, keyFile string, force bool) error {
	if !force {
		for _, f := range []string{keyFile, keyFile + ".pub"} {
			if _, err := os.Stat(f); err == nil {
				return fmt.Errorf("%s already exists; choose another -o or pass --force to overwrite it", f)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("checking %s: %w", f, err)
			}
		}
	}
	// A fresh machine has no ~/.config/openhuman yet: make the key's folder,
	// private to the user (an existing folder keeps its mode).
	if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", keyFile, err)
	}
	pub, priv, err := signature.GenerateKey(nil)
	if err != nil {
		return err
	}
	pemBytes, err := signature.MarshalPrivateKey(priv)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(keyFile, pemBytes, 0o600); err != nil {
		return fmt.Errorf("writing private key: %w", err)
	}
	pubText := signature.FormatPublicKey(pub)
	if err := writeFileAtomic(keyFile+".pub", []byte(pubText+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing public key: %w", err)
	}
	fmt.Fprintf(out, "private key: %s (keep it secret)\npublic key:  %s.pub\nkey id:      %s\n\nTrust it in policy.toml:\n[trust]\nkeys = [%q]\n",
		keyFile, keyFile, signature.Fingerprint(pub), pubText)
	return nil
}

func runSign(out io.Writer, file, keyFile, dest string) error {
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return fmt.Errorf("reading key: %w", err)
	}
	priv, err := signature.ParsePrivateKey(keyPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", keyFile, err)
	}
	module, err := os.ReadFile(file)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("reading module: %w", err)}
	}
	signed, err := signature.Sign(module, priv)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: %w", file, err)}
	}
	if dest == "" {
		dest = file
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(file); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := writeFileAtomic(dest, signed, mode); err != nil {
		return fmt.Errorf("writing signed module: %w", err)
	}
	st, err := signature.Verify(signed, nil)
	if err != nil || st.State != signature.StateValid {
		return fmt.Errorf("signed module does not verify (%v, %v); this is a bug", st, err)
	}
	fmt.Fprintf(out, "signed %s with key %s\nsha256 %s (pin this in policy.toml: the signature is part of the file)\n", dest, st.KeyID, fileSHA256(signed))
	return nil
}

// writeFileAtomic writes data to a temporary file beside path and renames it into
// place. Its errors name path, never the temporary file.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	if err := writeFileAtomicTemp(path, data, mode); err != nil {
		var pe *fs.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			return &fs.PathError{Op: "write", Path: path, Err: pe.Err}
		case errors.As(err, &le):
			return &fs.PathError{Op: "write", Path: path, Err: le.Err}
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func writeFileAtomicTemp(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
