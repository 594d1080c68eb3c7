package ingest

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

func TestDebugCorpus(t *testing.T) {
	dir := os.Getenv("DEBUG_CORPUS")
	if dir == "" {
		t.Skip()
	}
	c := &collector{}
	sum, err := Run(context.Background(), c, []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(sum.Line(), "skipped", sum.Skipped)
	for _, e := range sum.Errors {
		t.Log("ERR", e.Error())
	}
	for _, e := range sum.Notes {
		t.Log("NOTE", e.Error())
	}
	f, _ := os.Create("/tmp/ingestwork/dump.json")
	enc := json.NewEncoder(f)
	enc.SetIndent("", " ")
	enc.Encode(c.srcs)
	f.Close()
}
