//go:build unix

package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorldWritablePolicyRefused (finding 11): a policy file others may write
// is refused with the fix; the owner's own 0600 file loads.
func TestWorldWritablePolicyRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(path, []byte("[defaults]\ntimeout_ms = 1000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatalf("0600: %v", err)
	}
	// Group-writable with the process's own group (umask 002, a user-private
	// group) is the owner's.
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatalf("0664, own group: %v", err)
	}
	for _, mode := range []os.FileMode{0o666, 0o602} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), "writable by other users") || !strings.Contains(err.Error(), "chmod go-w") {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
}
