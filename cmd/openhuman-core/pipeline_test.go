package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A client that pipelines 200 searches on stdio (no waiting for answers) gets
// 200 answers and no error: beyond the session's in-flight bound the server
// stops reading stdin until a call finishes (ecfd484 answered 168 of them
// -32001 "too many tool calls in flight").
func TestPipelinedSearchesOnStdio(t *testing.T) {
	e := newCLIEnv(t)
	notes, mbox := writeCorpus(t, t.TempDir())
	if _, errOut, code := e.run("", "ingest", notes, mbox); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipeliner","version":"0"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"brake quote %d","k":3}}}`+"\n", i, i)
	}
	out, errOut, code := e.run(in.String(), "mcp")
	if code != 0 {
		t.Fatalf("mcp: exit %d\n%s", code, errOut)
	}
	answers, errs := map[float64]bool{}, 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			ID    float64
			Error *struct {
				Code    int
				Message string
			}
			Result *struct{ IsError bool }
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad frame %q: %v", line, err)
		}
		if m.ID == 0 {
			continue
		}
		answers[m.ID] = true
		if m.Error != nil || m.Result == nil || m.Result.IsError {
			errs++
			if errs < 3 {
				t.Errorf("call %v: %s", m.ID, line)
			}
		}
	}
	if len(answers) != 200 || errs != 0 {
		t.Errorf("%d answers, %d errors; want 200 answers and 0 errors", len(answers), errs)
	}
}
