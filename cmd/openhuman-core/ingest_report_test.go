package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIngestReportFlag: ingest --report FILE writes every file with what
// happened to it, also the skipped ones the stderr lines cut short.
func TestIngestReportFlag(t *testing.T) {
	e := newCLIEnv(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.md"), []byte("# Plans\n\nBuy milk.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 13 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.jpg", i)), []byte("\xff\xd8\xff\xe0"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	report := filepath.Join(t.TempDir(), "report.json")
	_, errOut, code := e.run("", "ingest", "--report", report, dir)
	if code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "and 3 more (ingest --report FILE lists every file)") || !strings.Contains(errOut, "listed in "+report) {
		t.Errorf("stderr does not point to the report:\n%s", errOut)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Files []struct{ Path, Reader, Status string }
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, b)
	}
	status := map[string]string{}
	for _, f := range rep.Files {
		status[filepath.Base(f.Path)] = f.Reader + "/" + f.Status
	}
	if len(status) != 14 || status["note.md"] != "docs/ingested" || status["12.jpg"] != "/skipped" {
		t.Errorf("report files: %v", status)
	}
}
