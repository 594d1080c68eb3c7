package toolaudit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/examples"
	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
	"github.com/openhuman/openhuman-core/policy"
	toolswasm "github.com/openhuman/openhuman-core/tools-wasm"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

const examplesDir = "../../examples"

// testKey is a fixed signing key so signed goldens are stable (ed25519 is deterministic).
var testKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x42}, ed25519.SeedSize))

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func readExample(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplesDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pinnedPolicy pins every committed C module with its catalogue grant, plus extra entries.
func pinnedPolicy(t *testing.T, extra string) *policy.Policy {
	t.Helper()
	var b strings.Builder
	for _, m := range examples.CModules() {
		mod := readExample(t, m.Wasm())
		fmt.Fprintf(&b, "[[module]]\nfile = %q\nsha256 = %q\ngrant = %q\n\n", filepath.Base(m.Wasm()), digest(mod), m.Grant)
	}
	b.WriteString(extra)
	p, err := policy.Parse([]byte(b.String()), "policy.toml")
	if err != nil {
		t.Fatalf("test policy: %v\n%s", err, b.String())
	}
	return p
}

// tampered signs a module with testKey and flips one byte of its code section.
func tampered(t *testing.T, mod []byte) []byte {
	t.Helper()
	signed, err := signature.Sign(mod, testKey)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wasmbin.Parse(signed)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Sections {
		if s.ID == wasmbin.SectionCode {
			out := append([]byte{}, signed...)
			out[s.End-2] ^= 0x01
			return out
		}
	}
	t.Fatal("no code section")
	return nil
}

func checkGolden(t *testing.T, name string, rep *Report) {
	t.Helper()
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./internal/toolaudit -update` to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs from the audit output (run with -update if the change is intended):\n%s", path, buf.String())
	}
	// The JSON is a stable contract: it decodes back into the same report.
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Schema != Schema {
		t.Errorf("report does not round-trip: %v", err)
	}
}

func TestGoldenCModules(t *testing.T) {
	pol := pinnedPolicy(t, "")
	for _, m := range examples.CModules() {
		t.Run(m.Name, func(t *testing.T) {
			mod := readExample(t, m.Wasm())
			rep, err := Audit(mod, Options{Name: filepath.ToSlash(filepath.Join("examples", m.Wasm())), Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, m.Name, rep)
			wantExit := ExitWouldLoad
			if m.Expected == examples.RefusedAtAudit {
				// Every refused example is pinned and granted here: what
				// refuses it is in the module, so no policy can admit it.
				wantExit = ExitNeverLoadable
				if m.Name == "ungranted" { // pinned with less than it asks for
					wantExit = ExitRefused
				}
			}
			if rep.ExitCode() != wantExit {
				t.Errorf("exit %d, want %d; reasons %q", rep.ExitCode(), wantExit, rep.Verdict.Reasons)
			}
		})
	}
}

func TestRefusalReasons(t *testing.T) {
	pol := pinnedPolicy(t, "")
	audit := func(name string) *Report {
		t.Helper()
		rep, err := Audit(readExample(t, filepath.Join("hostile", name+".wasm")), Options{Name: name + ".wasm", Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	cases := map[string][]string{
		"path_open":    {"wasi_snapshot_preview1.path_open", "only the WASI basics"},
		"ungranted":    {`grants ["memory.read"] but the module requests ["web.searxng"]`},
		"manifest_lie": {"openhuman.searxng_search", "its manifest does not request"},
	}
	for name, wants := range cases {
		rep := audit(name)
		all := strings.Join(rep.Verdict.Reasons, "\n")
		for _, w := range wants {
			if !strings.Contains(all, w) {
				t.Errorf("%s: reasons %q do not mention %q", name, rep.Verdict.Reasons, w)
			}
		}
		if rep.Verdict.Grant != nil {
			t.Errorf("%s: a refused module reports a grant", name)
		}
	}
	rep := audit("path_open")
	if rep.Imports[0].Class != ClassForbidden {
		t.Errorf("path_open class = %s", rep.Imports[0].Class)
	}
	rep = audit("extism_http")
	var classes []string
	for _, im := range rep.Imports {
		classes = append(classes, im.Name+"="+im.Class)
	}
	if !strings.Contains(strings.Join(classes, " "), "http_request="+ClassExtismNeverGranted) {
		t.Errorf("extism classes: %v", classes)
	}
	// Unpinned: the refusal says exactly what to add.
	rep, err := Audit(readExample(t, "hostile/infinite_loop.wasm"), Options{Name: "loop.wasm"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ExitCode() != ExitRefused || rep.Verdict.Status != StatusNeedsPolicy || !strings.Contains(rep.Verdict.Fix, "sha256 = \""+rep.SHA256+"\"") {
		t.Errorf("unpinned: %d %s %q fix %q", rep.ExitCode(), rep.Verdict.Status, rep.Verdict.Reasons, rep.Verdict.Fix)
	}
	if strings.Contains(strings.Join(rep.Verdict.Reasons, ""), "[[module]]") {
		t.Errorf("unpinned: the snippet belongs in fix, not in the reasons: %q", rep.Verdict.Reasons)
	}
}

// TestNeverLoadableHasNoSnippet: an unpinned module that imports path_open is
// never loadable; the reason comes first, and no pin snippet invites pinning it.
func TestNeverLoadableHasNoSnippet(t *testing.T) {
	rep, err := Audit(readExample(t, "hostile/path_open.wasm"), Options{Name: "path_open.wasm"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ExitCode() != ExitNeverLoadable || rep.Verdict.Status != StatusNeverLoadable || rep.Verdict.Fix != "" {
		t.Fatalf("exit %d status %s fix %q", rep.ExitCode(), rep.Verdict.Status, rep.Verdict.Fix)
	}
	if len(rep.Verdict.Reasons) < 2 || !strings.Contains(rep.Verdict.Reasons[0], "path_open") {
		t.Errorf("the forbidden import is not the first reason: %q", rep.Verdict.Reasons)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	verdict := out[strings.Index(out, "verdict:"):]
	if strings.Contains(out, "[[module]]") || !strings.HasPrefix(verdict, "verdict: NEVER LOADABLE") ||
		!strings.Contains(verdict, "path_open") {
		t.Errorf("text verdict:\n%s", verdict)
	}
	// The harmless unpinned module is told what to add.
	rep, _ = Audit(readExample(t, "c-hello/hello.wasm"), Options{Name: "hello.wasm"})
	text.Reset()
	_ = rep.WriteText(&text)
	out = text.String()
	verdict = out[strings.Index(out, "verdict:"):]
	if rep.ExitCode() != ExitRefused || !strings.HasPrefix(verdict, "verdict: REFUSED until the policy admits it") ||
		!strings.Contains(verdict, "to allow it add to policy.toml:\n[[module]]") {
		t.Errorf("exit %d; text verdict:\n%s", rep.ExitCode(), verdict)
	}
}

func TestSignatureVerdicts(t *testing.T) {
	base := readExample(t, "hostile/infinite_loop.wasm")
	signed, err := signature.Sign(base, testKey)
	if err != nil {
		t.Fatal(err)
	}
	bad := tampered(t, base)
	pub := signature.FormatPublicKey(testKey.Public().(ed25519.PublicKey))
	otherPub, _, _ := signature.GenerateKey(nil)
	pin := func(mods ...[]byte) string {
		var b strings.Builder
		for i, m := range mods {
			fmt.Fprintf(&b, "[[module]]\nfile = \"m%d.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\n", i, digest(m))
		}
		return b.String()
	}
	cases := []struct {
		name    string
		mod     []byte
		trust   string
		exit    int
		state   string
		trusted bool
		reason  string
	}{
		{"signed-trusted-required", signed, fmt.Sprintf("[trust]\nkeys = [%q]\nrequire_signature = true\n", pub), ExitWouldLoad, signature.StateValid, true, ""},
		{"signed-untrusted-required", signed, fmt.Sprintf("[trust]\nkeys = [%q]\nrequire_signature = true\n", signature.FormatPublicKey(otherPub)), ExitRefused, signature.StateValid, false, "is not in [trust] keys"},
		{"signed-not-required", signed, "", ExitWouldLoad, signature.StateValid, false, ""},
		{"unsigned-required", base, fmt.Sprintf("[trust]\nkeys = [%q]\nrequire_signature = true\n", pub), ExitRefused, signature.StateUnsigned, false, "module is unsigned"},
		{"tampered", bad, fmt.Sprintf("[trust]\nkeys = [%q]\n", pub), ExitNeverLoadable, signature.StateInvalid, false, "changed after signing"},
	}
	for _, c := range cases {
		pol, err := policy.Parse([]byte(pin(signed, base, bad)+c.trust), "policy.toml")
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Audit(c.mod, Options{Name: "m.wasm", Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if rep.ExitCode() != c.exit || rep.Signature.State != c.state || rep.Signature.Trusted != c.trusted {
			t.Errorf("%s: exit %d state %s trusted %v; reasons %q", c.name, rep.ExitCode(), rep.Signature.State, rep.Signature.Trusted, rep.Verdict.Reasons)
		}
		if c.reason != "" && !strings.Contains(strings.Join(rep.Verdict.Reasons, "\n"), c.reason) {
			t.Errorf("%s: reasons %q lack %q", c.name, rep.Verdict.Reasons, c.reason)
		}
		if c.name == "tampered" {
			checkGolden(t, "tampered_signed", rep)
			var text bytes.Buffer
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "INVALID signature claiming key "+signature.Fingerprint(testKey.Public().(ed25519.PublicKey))) {
				t.Errorf("text does not flag the invalid signature:\n%s", text.String())
			}
		}
	}
}

func TestInvalidModules(t *testing.T) {
	good := readExample(t, "hostile/infinite_loop.wasm")
	stripped, err := wasmbin.StripCustomSection(good, policy.ManifestSection)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mod  []byte
		exit int
		want string
	}{
		{"empty", nil, ExitInvalid, "too short"},
		{"elf", []byte("\x7fELF\x02\x01\x01\x00rest"), ExitInvalid, "bad magic"},
		{"truncated", good[:len(good)-40], ExitInvalid, "truncated"},
		{"no manifest", stripped, ExitNeverLoadable, "no openhuman.manifest custom section"},
		{"bad manifest", func() []byte {
			b, _ := wasmbin.SetCustomSection(good, policy.ManifestSection, []byte("abi = 3\n"))
			return b
		}(), ExitNeverLoadable, "manifest"},
	}
	for _, c := range cases {
		rep, err := Audit(c.mod, Options{Name: c.name})
		if (c.exit == ExitInvalid) != (err != nil) {
			t.Errorf("%s: err = %v", c.name, err)
		}
		if err != nil && !errors.Is(err, wasmbin.ErrInvalid) {
			t.Errorf("%s: error does not wrap ErrInvalid: %v", c.name, err)
		}
		if rep.ExitCode() != c.exit || !strings.Contains(strings.Join(rep.Verdict.Reasons, "\n")+rep.Error, c.want) {
			t.Errorf("%s: exit %d reasons %q error %q, want exit %d mentioning %q", c.name, rep.ExitCode(), rep.Verdict.Reasons, rep.Error, c.exit, c.want)
		}
		var text bytes.Buffer
		if err := rep.WriteText(&text); err != nil || text.Len() == 0 {
			t.Errorf("%s: text rendering failed: %v", c.name, err)
		}
	}
	rep, _ := Audit([]byte("nope, not wasm"), Options{Name: "notes.txt"})
	checkGolden(t, "not_wasm", rep)
}

// TestGoldenBuiltins audits every embedded first-party module as the binary does.
// A change of a first-party manifest or import list needs -update.
func TestGoldenBuiltins(t *testing.T) {
	mods, err := toolswasm.Modules()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		rep, err := Audit(m.Wasm, Options{Name: "builtin:" + m.Name, Builtin: true, PinnedSHA256: m.SHA256})
		if err != nil {
			t.Fatal(err)
		}
		if rep.ExitCode() != ExitWouldLoad {
			t.Errorf("%s: first-party module refused: %q", m.Name, rep.Verdict.Reasons)
		}
		for _, im := range rep.Imports {
			if im.Class == ClassForbidden {
				t.Errorf("%s imports forbidden %s.%s", m.Name, im.Module, im.Name)
			}
		}
		// Every rebuild of a first-party module changes its digest; the golden keeps
		// what a reviewer checks (manifest, imports, exports, verdict) and blanks it.
		if rep.SHA256 != m.SHA256 || rep.Signature.Digest != "sha256:"+m.SHA256 {
			t.Errorf("%s: digest %s / %s, want the pinned %s", m.Name, rep.SHA256, rep.Signature.Digest, m.SHA256)
		}
		rep.SHA256, rep.Size, rep.Signature.Digest = "<pinned at build time>", 0, "<pinned at build time>"
		checkGolden(t, "builtin_"+m.Name, rep)
		// A wrong pin is refused.
		bad, _ := Audit(m.Wasm, Options{Name: m.Name, Builtin: true, PinnedSHA256: strings.Repeat("0", 64)})
		if bad.ExitCode() != ExitNeverLoadable || !strings.Contains(strings.Join(bad.Verdict.Reasons, ""), "does not match the digest pinned") {
			t.Errorf("%s: wrong pin not refused: %q", m.Name, bad.Verdict.Reasons)
		}
	}
}

// BenchmarkAuditFirstParty audits a 3.5 MB first-party Go module (parse, classify,
// manifest, signature, verdict).
func BenchmarkAuditFirstParty(b *testing.B) {
	m, err := toolswasm.Get("memory.search")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(m.Wasm)))
	for b.Loop() {
		rep, _ := Audit(m.Wasm, Options{Name: m.Name, Builtin: true, PinnedSHA256: m.SHA256})
		if !rep.Verdict.WouldLoad {
			b.Fatal(rep.Verdict.Reasons)
		}
	}
}
