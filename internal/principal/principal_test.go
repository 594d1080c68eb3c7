package principal_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/principal"
)

// A token minted by Add resolves to its principal and scope, the operator
// token to the operator, anything else to nobody; the file keeps hashes only;
// a revoke and a new principal are seen by a running Set at its next lookup.
func TestAddResolveRevoke(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws", principal.FileName)
	set := principal.NewSet("operator-secret", path)
	if p, ok := set.Resolve("operator-secret"); !ok || p.Name != principal.Operator || !p.Scope.Full() {
		t.Fatalf("operator token: %+v %v", p, ok)
	}
	tok, err := principal.Add(path, "ana", []string{"doc:*"}, []string{"doc:/private/*"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p, ok := set.Resolve(tok)
	if !ok || p.Name != "ana" || !p.Scope.Allows("document", "doc:/a.md") || p.Scope.Allows("document", "doc:/private/b.md") || p.Scope.Allows("email", "email:x") {
		t.Fatalf("ana's token: %+v %v", p, ok)
	}
	for _, bad := range []string{"", tok + "x", tok[:len(tok)-1], strings.ToUpper(tok), "operator-secret "} {
		if _, ok := set.Resolve(bad); ok {
			t.Errorf("%q resolves", bad)
		}
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), tok) || strings.Contains(string(raw), tok[4:]) {
		t.Error("the file holds the token")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	tok2, err := principal.Add(path, "ci-agent", []string{"kind:chat"}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := principal.Revoke(path, "ana"); err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Resolve(tok); ok {
		t.Error("a revoked token still resolves")
	}
	if p, ok := set.Resolve(tok2); !ok || p.Name != "ci-agent" {
		t.Errorf("a principal added after the set was made: %+v %v", p, ok)
	}
	if err := principal.Revoke(path, "ana"); err == nil || !strings.Contains(err.Error(), "ci-agent") {
		t.Errorf("revoking an unknown name: %v", err)
	}
}

// A principals file that cannot be read refuses every principal (never
// guesses) while the operator token still passes, and says why.
func TestBrokenFileFailsClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), principal.FileName)
	tok, err := principal.Add(path, "ana", []string{"*"}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	set := principal.NewSet("op", path)
	if _, ok := set.Resolve(tok); !ok {
		t.Fatal("ana does not resolve")
	}
	for _, body := range []string{"{not json", `{"principals":[{"name":"ana","sha256":"zz","allow":["*"]}]}`, `{"principals":[{"name":"ana","sha256":"` + strings.Repeat("0", 64) + `","allow":["nope"]}]}`} {
		os.WriteFile(path, []byte(body), 0o600)
		if _, ok := set.Resolve(tok); ok {
			t.Errorf("a token resolves from the broken file %s", body)
		}
		if set.Err() == nil {
			t.Errorf("no error for %s", body)
		}
		if _, ok := set.Resolve("op"); !ok {
			t.Error("the operator token stopped working")
		}
	}
}

// A principals file too big, or listing too many principals, is refused with
// its size named, not read into memory whole.
func TestHugeFileRefused(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(64 << 20) // 64 MiB of zeros, sparse
	f.Close()
	if _, err := principal.Load(big); err == nil {
		t.Error("a 64 MiB principals file loads")
	}
	many := filepath.Join(dir, "many.json")
	var b strings.Builder
	b.WriteString(`{"principals":[`)
	for i := range principal.MaxPrincipals + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name":"p` + strconv.Itoa(i) + `","sha256":"` + strings.Repeat("0", 64) + `","allow":["*"]}`)
	}
	b.WriteString("]}")
	os.WriteFile(many, []byte(b.String()), 0o600)
	if _, err := principal.Load(many); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d principals: %v", principal.MaxPrincipals+1, err)
	}
	set := principal.NewSet("op", many)
	if _, ok := set.Resolve("ohp_" + strings.Repeat("0", 64)); ok {
		t.Error("a token resolves from a file over the bound")
	}
}
