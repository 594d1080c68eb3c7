package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/signature"
	"github.com/openhuman/openhuman-core/internal/toolaudit"
	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestAuditExitCodes(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	loop, err := os.ReadFile("../../examples/hostile/infinite_loop.wasm")
	if err != nil {
		t.Fatal(err)
	}
	pathOpen, err := os.ReadFile("../../examples/hostile/path_open.wasm")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loopFile := write("loop.wasm", loop)
	openFile := write("path_open.wasm", pathOpen)
	junk := write("junk.wasm", []byte("#!/bin/sh\necho hi\n"))
	pol := write("policy.toml", []byte(fmt.Sprintf("[[module]]\nfile = \"loop.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\n[[module]]\nfile = \"path_open.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\n", hexSum(loop), hexSum(pathOpen))))

	cases := []struct {
		name, file, policy string
		json               bool
		exit               int
		want               string
	}{
		{"would load", loopFile, pol, false, 0, "verdict: WOULD LOAD, granted memory.read"},
		{"would load json", loopFile, pol, true, 0, `"would_load": true`},
		{"forbidden import", openFile, pol, false, 3, "FORBIDDEN"},
		{"not wasm", junk, pol, true, 2, `"valid": false`},
		{"missing file", filepath.Join(dir, "nope.wasm"), pol, false, 2, ""},
		{"missing policy", loopFile, filepath.Join(dir, "nope.toml"), false, 2, ""},
	}
	for _, c := range cases {
		var out bytes.Buffer
		err := runAudit(&out, quiet, c.file, auditFlags{policyFile: c.policy, json: c.json})
		if got := exitCodeOf(err); got != c.exit {
			t.Errorf("%s: exit %d, want %d (err %v)\n%s", c.name, got, c.exit, err, out.String())
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: output lacks %q:\n%s", c.name, c.want, out.String())
		}
		if c.json && out.Len() > 0 {
			var rep toolaudit.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Schema != toolaudit.Schema {
				t.Errorf("%s: JSON output does not decode: %v", c.name, err)
			}
		}
	}
}

func TestKeygenSignAudit(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	key := filepath.Join(dir, "signing.key")
	var out bytes.Buffer
	if err := runKeygen(&out, key, false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(key)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode: %v %v", fi.Mode(), err)
	}
	pubText, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub := strings.TrimSpace(string(pubText))
	if _, err := signature.ParsePublicKey(pub); err != nil || !strings.Contains(out.String(), pub) {
		t.Fatalf("public key %q: %v\n%s", pub, err, out.String())
	}
	if err := runKeygen(io.Discard, key, false); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("keygen overwrote a key: %v", err)
	}

	mod, _ := os.ReadFile("../../examples/hostile/infinite_loop.wasm")
	file := filepath.Join(dir, "loop.wasm")
	os.WriteFile(file, mod, 0o644)
	out.Reset()
	if err := runSign(&out, file, key, ""); err != nil {
		t.Fatal(err)
	}
	signed, _ := os.ReadFile(file)
	if !strings.Contains(out.String(), hexSum(signed)) {
		t.Errorf("sign output does not print the new sha256:\n%s", out.String())
	}
	// Tampered copy: flip a byte of the code section.
	m, _ := wasmbin.Parse(signed)
	bad := bytes.Clone(signed)
	for _, s := range m.Sections {
		if s.ID == wasmbin.SectionCode {
			bad[s.End-2] ^= 1
		}
	}
	badFile := filepath.Join(dir, "bad.wasm")
	os.WriteFile(badFile, bad, 0o644)
	pol := filepath.Join(dir, "policy.toml")
	os.WriteFile(pol, []byte(fmt.Sprintf("[[module]]\nfile = \"loop.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\n[[module]]\nfile = \"bad.wasm\"\nsha256 = %q\ngrant = [\"memory.read\"]\n[trust]\nkeys = [%q]\nrequire_signature = true\n", hexSum(signed), hexSum(bad), pub)), 0o644)

	out.Reset()
	if err := runAudit(&out, quiet, file, auditFlags{policyFile: pol}); err != nil || !strings.Contains(out.String(), "(valid, trusted)") {
		t.Errorf("signed module: %v\n%s", err, out.String())
	}
	out.Reset()
	err = runAudit(&out, quiet, badFile, auditFlags{policyFile: pol})
	if exitCodeOf(err) != 3 || !strings.Contains(out.String(), "INVALID signature") {
		t.Errorf("tampered module: exit %d\n%s", exitCodeOf(err), out.String())
	}
	if err := runSign(io.Discard, file, filepath.Join(dir, "signing.key.pub"), ""); err == nil {
		t.Error("signing with a public key file succeeded")
	}
}

// TestAuditBuiltin audits the embedded first-party modules: any of the six memory
// tools names the one memory module (reported with all six tools), and "all" lists
// the two modules.
func TestAuditBuiltin(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	pol := filepath.Join(t.TempDir(), "policy.toml")
	os.WriteFile(pol, nil, 0o644)
	var out bytes.Buffer
	if err := runAuditBuiltin(&out, quiet, "tree.browse", auditFlags{policyFile: pol, json: true}); err != nil {
		t.Fatalf("audit --builtin tree.browse: %v\n%s", err, out.String())
	}
	var rep toolaudit.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range rep.Manifest.Tools {
		names = append(names, tl.Name)
	}
	if rep.File != "builtin:memory" || strings.Join(names, ",") != "memory.search,memory.recall,tree.read_chunk,tree.browse,tree.top_entities,tree.list_sources" ||
		strings.Join(rep.Manifest.Capabilities, ",") != "memory.read" {
		t.Fatalf("audit --builtin tree.browse: file %s tools %v capabilities %v", rep.File, names, rep.Manifest.Capabilities)
	}
	out.Reset()
	if err := runAuditBuiltin(&out, quiet, "all", auditFlags{policyFile: pol, json: true}); err != nil {
		t.Fatalf("audit --builtin all: %v", err)
	}
	var all []toolaudit.Report
	if err := json.Unmarshal(out.Bytes(), &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].File != "builtin:memory" || all[1].File != "builtin:searxng_search" {
		t.Fatalf("audit --builtin all: %d reports", len(all))
	}
	if err := runAuditBuiltin(&out, quiet, "fs.write", auditFlags{policyFile: pol}); exitCodeOf(err) != toolaudit.ExitInvalid {
		t.Fatalf("audit --builtin fs.write: %v", err)
	}
}

// TestAuditDiffCLI: --diff prints what changed, exits as diff(1), and its JSON
// is the stable openhuman.audit-diff/1 document.
func TestAuditDiffCLI(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hello, ungranted := "../../examples/c-hello/hello.wasm", "../../examples/hostile/ungranted.wasm"
	var out bytes.Buffer
	err := runAuditDiff(&out, quiet, hello, ungranted, auditFlags{policyFile: writeEmptyPolicy(t)})
	if exitCodeOf(err) != 1 {
		t.Fatalf("exit %d, want 1: %v", exitCodeOf(err), err)
	}
	for _, want := range []string{"capability\n  + web.searxng", "- openhuman.sources_list", "+ hostile.ungranted"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := runAuditDiff(&out, quiet, hello, hello, auditFlags{policyFile: writeEmptyPolicy(t), json: true}); err != nil {
		t.Fatalf("same module: %v", err)
	}
	if !strings.Contains(out.String(), `"schema": "openhuman.audit-diff/1"`) || !strings.Contains(out.String(), `"changes": []`) {
		t.Errorf("json:\n%s", out.String())
	}
	if err := runAuditDiff(&out, quiet, hello, "../../README.md", auditFlags{policyFile: writeEmptyPolicy(t)}); exitCodeOf(err) != 2 {
		t.Errorf("not a module: exit %d (%v)", exitCodeOf(err), err)
	}
}

func writeEmptyPolicy(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
