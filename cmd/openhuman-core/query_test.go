package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// search and recall run the memory tools from the shell, print hits as a person
// reads them, and are audited with the label cli.
func TestSearchAndRecallCommands(t *testing.T) {
	e := newCLIEnv(t)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	out, errOut, code := e.run("", "search", "brake", "quote")
	if code != 0 {
		t.Fatalf("search: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"1. [email] Brake repair quote — 2026-02-0", "Alice Martin <alice@kestrel.example>, 2026-02-03 09:00:", "grinding noise when braking", "source email:brakes-1@kestrel.example"} {
		if !strings.Contains(out, want) {
			t.Errorf("search output lacks %q:\n%s", want, out)
		}
	}
	out, _, code = e.run("", "recall", "-k", "1", "--json", "the car makes a noise when stopping")
	var res struct {
		Chunks []struct {
			SourceKind string `json:"source_kind"`
		} `json:"chunks"`
		Mode string `json:"mode"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Chunks) != 1 || res.Mode == "" {
		t.Errorf("recall --json: exit %d\n%s", code, out)
	}
	if _, errOut, code := e.run("", "search", "-k", "99", "x"); code != 2 || !strings.Contains(errOut, "-k must be 1..50") {
		t.Errorf("search -k 99: exit %d, %s", code, errOut)
	}
	audit, err := os.ReadFile(filepath.Join(e.ohome, "workspace", "audit", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, l := range strings.Split(strings.TrimSpace(string(audit)), "\n") {
		var en struct{ Session, Tool, Outcome string }
		if json.Unmarshal([]byte(l), &en) == nil && en.Session == "cli" && en.Outcome == "ok" && (en.Tool == "memory.search" || en.Tool == "memory.recall") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d audit lines from cli, want 2:\n%s", n, audit)
	}
}
