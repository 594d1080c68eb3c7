package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// TestReportListsEveryFile: with Options.Report every file is in the report with
// its format and outcome — ingested, partly ingested, failed, skipped, nothing
// to ingest — however many share a reason (the stderr lines cut at
// SkipListEach).
func TestReportListsEveryFile(t *testing.T) {
	files := map[string]string{
		"chat.txt": "[14/03/2023, 09:15:02] Ann Lee: Morning!\n[14/03/2023, 09:16:40] Bob Roy: Yes\n",
		"note.md":  "# Plans\n\nBuy milk.\n",
		"empty.md": "",
		"broken.json": `{"name":"X","type":"personal_chat","id":1,"messages":[{"id":1,"type":"message","date":"2023-03-14T09:15:02","date_unixtime":"1678785302","from":"Ann","text":"kept"},` +
			`{"id":2,"type":"message","date":"1870-01-01T00:00:00","date_unixtime":"-3155673600","from":"Ann","text":"too old"}]}`,
	}
	for i := range 14 {
		files[fmt.Sprintf("img/%02d.jpg", i)] = "\xff\xd8\xff\xe0"
	}
	dir := readertest.WriteFiles(t, files)
	_, sum := runOn(t, Options{Report: true}, dir)
	got := map[string]FileOutcome{}
	for _, o := range sum.Outcomes() {
		rel, _ := filepath.Rel(dir, o.Path)
		got[filepath.ToSlash(rel)] = o
	}
	want := map[string][2]string{
		"chat.txt": {"whatsapp", "ingested"}, "note.md": {"docs", "ingested"}, "empty.md": {"docs", "nothing to ingest"},
		"broken.json": {"telegram", "partly ingested"},
	}
	for i := range 14 {
		want[fmt.Sprintf("img/%02d.jpg", i)] = [2]string{"", "skipped"}
	}
	for p, w := range want {
		o, ok := got[p]
		if !ok {
			t.Errorf("%s missing from the report", p)
			continue
		}
		if o.Reader != w[0] || o.Status != w[1] {
			t.Errorf("%s: reader %q status %q, want %q %q (%+v)", p, o.Reader, o.Status, w[0], w[1], o)
		}
	}
	if o := got["img/13.jpg"]; o.Reason != readkit.ReasonMedia {
		t.Errorf("skip reason %q", o.Reason)
	}
	if o := got["broken.json"]; o.Sources != 1 || len(o.Errors) != 1 {
		t.Errorf("broken.json: %+v", o)
	}
	if o := got["empty.md"]; len(o.Warnings) == 0 {
		t.Errorf("empty.md says nothing: %+v", o)
	}
	if len(got) != len(want) {
		t.Errorf("report has %d entries, want %d: %v", len(got), len(want), got)
	}
	var buf bytes.Buffer
	if err := sum.WriteReport(&buf); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Summary struct{ Files, Skipped int }
		Files   []FileOutcome
	}
	if err := json.Unmarshal(buf.Bytes(), &decoded); err != nil || len(decoded.Files) != len(want) || decoded.Summary.Skipped != 14 {
		t.Errorf("JSON report: %v %+v", err, decoded.Summary)
	}
}
