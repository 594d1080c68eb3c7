// Package principal is who a bearer token of serve is: the operator (the token
// of OPENHUMAN_CORE_TOKEN or <workspace>/core.token, full access) or a named
// principal minted by `openhuman-core tokens add NAME --allow GLOB…`, whose
// scope (index.Scope) every read of its calls carries into the store's queries.
//
// Principals are kept in one place for both store backends: the file
// <workspace>/principals.json (mode 0600), holding each principal's name, scope
// and the SHA-256 of its token, never the token. It sits beside core.token
// because a token is a credential of serve, not part of the memory: a pg_dump
// or a copy of the store carries no credentials, the database's own roles need
// no access to them, the command works the same on SQLite and PostgreSQL, and
// several serve processes of one team share the principals by sharing this one
// small file. serve notices a change of the file (tokens add, tokens revoke)
// at the next request.
package principal

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/internal/smallfile"
)

// FileName is the principals file's name in the workspace.
const FileName = "principals.json"

// Operator is the principal of the operator token (full access).
const Operator = "operator"

// TokenPrefix starts every principal token, so that secret scanners and people
// can tell one (the operator token has none).
const TokenPrefix = "ohp_"

// Limits of the file (hostile input: a huge or endless file must not take
// serve's memory).
const (
	// MaxPrincipals bounds the principals of one file.
	MaxPrincipals = 10000
	// maxFileBytes bounds what is read of the file: MaxPrincipals principals
	// with a few patterns each.
	maxFileBytes = 8 << 20
)

var reName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// Record is one principal as the file keeps it.
type Record struct {
	Name    string    `json:"name"`
	SHA256  string    `json:"sha256"` // hex SHA-256 of the token
	Allow   []string  `json:"allow"`
	Deny    []string  `json:"deny,omitempty"`
	Created time.Time `json:"created"`
}

type fileData struct {
	Principals []Record `json:"principals"`
}

// Path is the principals file of workspace.
func Path(workspace string) string { return filepath.Join(workspace, FileName) }

// CheckName reports what is wrong with a principal name.
func CheckName(name string) error {
	if name == Operator {
		return fmt.Errorf("principal name %q is reserved for the operator token", name)
	}
	if !reName.MatchString(name) {
		return fmt.Errorf("principal name %q: use 1 to 64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit (e.g. ana, ci-agent, ana@example.com)", name)
	}
	return nil
}

// Load reads the principals of path (none when it does not exist).
func Load(path string) ([]Record, error) {
	data, err := smallfile.Read(path, maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read principals file: %w (it holds the tokens of `openhuman-core tokens add`)", err)
	}
	var f fileData
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("principals file %s is not valid: %w (restore it, or move it aside and mint the tokens again)", path, err)
	}
	if len(f.Principals) > MaxPrincipals {
		return nil, fmt.Errorf("principals file %s holds %d principals, more than %d", path, len(f.Principals), MaxPrincipals)
	}
	seen := map[string]bool{}
	for i, r := range f.Principals {
		if err := CheckName(r.Name); err != nil {
			return nil, fmt.Errorf("principals file %s, entry %d: %w", path, i+1, err)
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("principals file %s: principal %q is listed twice", path, r.Name)
		}
		seen[r.Name] = true
		if b, err := hex.DecodeString(r.SHA256); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("principals file %s: principal %q: sha256 is not 64 hex digits", path, r.Name)
		}
		if _, err := index.ParseScope(r.Allow, r.Deny); err != nil {
			return nil, fmt.Errorf("principals file %s: principal %q: %w", path, r.Name, err)
		}
	}
	return f.Principals, nil
}

// save writes rs to path atomically (a temporary file renamed over it), mode
// 0600, its folder created 0700.
func save(path string, rs []Record) error {
	data, err := json.MarshalIndent(fileData{Principals: rs}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create the principals file's folder: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".principals-*.json")
	if err != nil {
		return fmt.Errorf("write principals file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write principals file: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write principals file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write principals file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write principals file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write principals file: %w", err)
	}
	return nil
}

// Add mints a token for a new principal name reading what allow and deny say,
// stores its hash in path and returns the token (shown once: only its hash is
// kept). Two concurrent Adds on one file may lose one of them: mint tokens one
// at a time.
func Add(path, name string, allow, deny []string, now time.Time) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	if _, err := index.ParseScope(allow, deny); err != nil {
		return "", err
	}
	rs, err := Load(path)
	if err != nil {
		return "", err
	}
	for _, r := range rs {
		if r.Name == name {
			return "", fmt.Errorf("principal %q exists already: revoke it first (openhuman-core tokens revoke %s) to mint a new token", name, name)
		}
	}
	if len(rs) >= MaxPrincipals {
		return "", fmt.Errorf("there are %d principals already, the most allowed: revoke unused ones", len(rs))
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate a token: %w", err)
	}
	token := TokenPrefix + hex.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(token))
	rs = append(rs, Record{Name: name, SHA256: hex.EncodeToString(sum[:]), Allow: allow, Deny: deny, Created: now.UTC().Truncate(time.Second)})
	if err := save(path, rs); err != nil {
		return "", err
	}
	return token, nil
}

// Revoke removes principal name from path: its token is refused from the next
// request on.
func Revoke(path, name string) error {
	rs, err := Load(path)
	if err != nil {
		return err
	}
	for i, r := range rs {
		if r.Name == name {
			return save(path, append(rs[:i:i], rs[i+1:]...))
		}
	}
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Errorf("no principal %q: there are none (openhuman-core tokens add NAME --allow GLOB mints one)", name)
	}
	if len(names) > 20 {
		names = append(names[:20], "…")
	}
	return fmt.Errorf("no principal %q; the principals are: %s", name, strings.Join(names, ", "))
}

// Principal is who a request is: a name and what it may read.
type Principal struct {
	Name  string
	Scope index.Scope // the zero Scope for the operator
}

type principalKey struct{}

// With returns ctx carrying p, and p's scope for the store (index.WithScope).
func With(ctx context.Context, p Principal) context.Context {
	return index.WithScope(context.WithValue(ctx, principalKey{}, p), p.Scope)
}

// From is the principal ctx carries (ok false: none, e.g. stdio).
func From(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Set resolves bearer tokens: the operator's, and those of the principals
// file, which it reads again when the file changes. It is safe for concurrent
// use.
type Set struct {
	operator [sha256.Size]byte
	path     string

	mu     sync.Mutex
	stamp  fileStamp
	byHash map[[sha256.Size]byte]Principal
	err    error // the file's last load error (principals refused meanwhile)
}

type fileStamp struct {
	mod  time.Time
	size int64
	ino  any
	ok   bool
}

// NewSet resolves operatorToken and the principals of path ("" for none).
func NewSet(operatorToken, path string) *Set {
	return &Set{operator: sha256.Sum256([]byte(operatorToken)), path: path}
}

// Resolve returns the principal of token, false when no principal has it (or
// the principals file cannot be read: then only the operator token passes, and
// Err says why). Tokens are compared by their SHA-256, so the time a lookup
// takes says nothing of a token's characters.
func (s *Set) Resolve(token string) (Principal, bool) {
	sum := sha256.Sum256([]byte(token))
	if sum == s.operator {
		return Principal{Name: Operator}, true
	}
	if s.path == "" || !strings.HasPrefix(token, TokenPrefix) {
		return Principal{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reload()
	p, ok := s.byHash[sum]
	return p, ok
}

// Err is the last error reading the principals file (nil when it read).
func (s *Set) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reload()
	return s.err
}

// reload reads the file again when its stamp changed (s.mu held).
func (s *Set) reload() {
	st := stampOf(s.path)
	if st == s.stamp && (s.byHash != nil || s.err != nil) {
		return
	}
	s.stamp = st
	rs, err := Load(s.path)
	if err != nil {
		s.err, s.byHash = err, nil
		return
	}
	m := make(map[[sha256.Size]byte]Principal, len(rs))
	for _, r := range rs {
		var h [sha256.Size]byte
		b, _ := hex.DecodeString(r.SHA256)
		copy(h[:], b)
		sc, _ := index.ParseScope(r.Allow, r.Deny) // checked by Load
		m[h] = Principal{Name: r.Name, Scope: sc}
	}
	s.err, s.byHash = nil, m
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi), ok: true}
}
