package rpcserver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/openhuman/openhuman-core/internal/smallfile"
)

// TokenEnv is the environment variable that sets the bearer token explicitly.
const TokenEnv = "OPENHUMAN_CORE_TOKEN"

// Token sources reported by LoadToken.
const (
	TokenFromEnv       = "env"
	TokenFromFile      = "file"
	TokenFromGenerated = "generated"
)

// minExposedTokenLen is the shortest explicit token accepted on a non-loopback address.
const minExposedTokenLen = 16

// LoadToken returns the bearer token for /rpc: envToken when it is not blank, else the
// token stored in path, else a new random token (32 bytes from crypto/rand, hex) written
// to path with mode 0600 (its folder is created with mode 0700). It reports where the
// token came from (TokenFromEnv, TokenFromFile or TokenFromGenerated).
func LoadToken(envToken, path string) (token, source string, err error) {
	if t := strings.TrimSpace(envToken); t != "" {
		return t, TokenFromEnv, nil
	}
	data, err := smallfile.Read(path, maxTokenFileBytes)
	switch {
	case err == nil:
		t := strings.TrimSpace(string(data))
		if t == "" {
			return "", "", fmt.Errorf("token file %s is empty: delete it to generate a new token, or set %s", path, TokenEnv)
		}
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return "", "", fmt.Errorf("token file %s is readable by other users and could not be restricted to 0600: %w", path, err)
			}
		}
		return t, TokenFromFile, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("read token file: %w (make it a readable file holding the one-line token, delete it to generate one, or set %s)", err, TokenEnv)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("generate bearer token: %w", err)
	}
	t := hex.EncodeToString(b[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", "", fmt.Errorf("create folder for token file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process generated it between our read and create: use theirs.
		return LoadToken("", path)
	}
	if err != nil {
		return "", "", fmt.Errorf("create token file %s: %w", path, err)
	}
	if _, err := f.WriteString(t + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return "", "", fmt.Errorf("write token file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", "", fmt.Errorf("write token file %s: %w", path, err)
	}
	return t, TokenFromGenerated, nil
}

// maxTokenFileBytes bounds what is read of the token file: a generated token
// is 65 bytes; a token file that is a device, a FIFO or a huge file must not
// take serve's memory or hang it (issue 39: core.token linked to /dev/zero
// crashed serve out of memory before it listened).
const maxTokenFileBytes = 4 << 10

// IsLoopback reports whether host (from a host:port address) only accepts connections
// from this machine: "localhost" or a loopback IP. An empty host, 0.0.0.0, :: and
// every other name listen on (or may resolve to) the network.
func IsLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckExposure refuses to bind addr to a non-loopback interface unless the token was
// set explicitly in the environment (tokenSource == TokenFromEnv) and is long enough.
func CheckExposure(addr, token, tokenSource string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid listen address %q: %w (use host:port, e.g. 127.0.0.1:7788)", addr, err)
	}
	if IsLoopback(host) {
		return nil
	}
	if tokenSource != TokenFromEnv {
		return fmt.Errorf("refusing to listen on %s: it is not a loopback address, so anyone on the network could reach your memory tree; "+
			"set %s explicitly in the environment to a long random secret (e.g. `openssl rand -hex 32`), or bind to 127.0.0.1", addr, TokenEnv)
	}
	if len(token) < minExposedTokenLen {
		return fmt.Errorf("refusing to listen on %s with a %d-character %s: a non-loopback address needs at least %d characters (e.g. `openssl rand -hex 32`)",
			addr, len(token), TokenEnv, minExposedTokenLen)
	}
	return nil
}

// tokenEqual compares a presented token with the expected one in constant time
// (hashing first, so the comparison time does not depend on the lengths either).
func tokenEqual(presented, want string) bool {
	a := sha256.Sum256([]byte(presented))
	b := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
