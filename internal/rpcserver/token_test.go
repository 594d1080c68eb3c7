package rpcserver

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadTokenGeneratesOnceAndReuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws", "core.token")
	tok, src, err := LoadToken("", path)
	if err != nil || src != TokenFromGenerated {
		t.Fatalf("first: %q %q %v", tok, src, err)
	}
	if b, err := hex.DecodeString(tok); err != nil || len(b) != 32 {
		t.Fatalf("token %q is not 32 bytes of hex", tok)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", st.Mode(), err)
	}
	if dst, _ := os.Stat(filepath.Dir(path)); dst.Mode().Perm() != 0o700 {
		t.Fatalf("workspace mode %v", dst.Mode())
	}
	tok2, src2, err := LoadToken("", path)
	if err != nil || tok2 != tok || src2 != TokenFromFile {
		t.Fatalf("second: %q %q %v (first %q)", tok2, src2, err, tok)
	}
	// The environment wins and leaves the file alone.
	tok3, src3, err := LoadToken("  from-env  ", path)
	if err != nil || tok3 != "from-env" || src3 != TokenFromEnv {
		t.Fatalf("env: %q %q %v", tok3, src3, err)
	}
	// A file readable by others is restricted to 0600.
	os.Chmod(path, 0o644)
	if _, _, err := LoadToken("", path); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode not restricted: %v", st.Mode())
	}
	// An empty file is a clear error, not a silent empty token.
	os.WriteFile(path, []byte("\n"), 0o600)
	if _, _, err := LoadToken("", path); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty file: %v", err)
	}
	// A token file that is a device or huge is refused without reading it
	// whole (issue 39: a link to /dev/zero took serve out of memory).
	os.Remove(path)
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadToken("", path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("token file linked to /dev/zero: %v", err)
	}
	os.Remove(path)
	os.WriteFile(path, []byte(strings.Repeat("k", 8<<10)), 0o600)
	if _, _, err := LoadToken("", path); err == nil || !strings.Contains(err.Error(), "more than the 4096 read") {
		t.Errorf("an 8 KiB token file: %v", err)
	}
}

func TestCheckExposure(t *testing.T) {
	long := strings.Repeat("k", 32)
	for _, c := range []struct {
		addr, token, source string
		wantErr             string
	}{
		{"127.0.0.1:7788", "t", TokenFromGenerated, ""},
		{"localhost:7788", "t", TokenFromFile, ""},
		{"[::1]:7788", "t", TokenFromGenerated, ""},
		{"0.0.0.0:7788", long, TokenFromFile, "set OPENHUMAN_CORE_TOKEN explicitly"},
		{":7788", long, TokenFromGenerated, "not a loopback address"},
		{"192.168.1.5:7788", long, TokenFromEnv, ""},
		{"192.168.1.5:7788", "short", TokenFromEnv, "at least 16 characters"},
		{"example.com:80", long, TokenFromFile, "not a loopback address"},
		{"nonsense", long, TokenFromEnv, "invalid listen address"},
	} {
		err := CheckExposure(c.addr, c.token, c.source)
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("CheckExposure(%s, %s) = %v, want %q", c.addr, c.source, err, c.wantErr)
		}
	}
}
