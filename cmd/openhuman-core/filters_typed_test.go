package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePeopleCorpus writes a Slack export whose #general spans June and July
// 2015: Micah Stubbs writes most of it, a "micah" handle is mentioned once, and
// two people are called Ann.
func writePeopleCorpus(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join(dir, "slack")
	files := map[string]string{
		"users.json": `[{"id":"U1","name":"micah","real_name":"Micah Stubbs"},{"id":"U2","name":"annl","real_name":"Ann Lee"},` +
			`{"id":"U3","name":"anns","real_name":"Ann Smith"},{"id":"U4","name":"javier","real_name":"Javier"}]`,
		"channels.json": `[{"id":"C1","name":"general"}]`,
	}
	june := time.Date(2015, 6, 10, 9, 0, 0, 0, time.UTC)
	var jun, jul []string
	for i := 0; i < 6; i++ {
		jun = append(jun, fmt.Sprintf(`{"type":"message","user":"U1","text":"June map draft %d of the hospital payments","ts":"%d.000100"}`, i, june.Add(time.Duration(i)*time.Hour).Unix()))
	}
	jun = append(jun, fmt.Sprintf(`{"type":"message","user":"U4","text":"thanks @micah for the map","ts":"%d.000100"}`, june.Add(7*time.Hour).Unix()))
	july := time.Date(2015, 7, 3, 9, 0, 0, 0, time.UTC)
	for i := 0; i < 4; i++ {
		jul = append(jul, fmt.Sprintf(`{"type":"message","user":"U1","text":"July meetup venue %d","ts":"%d.000100"}`, i, july.Add(time.Duration(i)*time.Hour).Unix()))
	}
	jul = append(jul, fmt.Sprintf(`{"type":"message","user":"U2","text":"Ann Lee here: slides ready","ts":"%d.000100"}`, july.Add(5*time.Hour).Unix()))
	jul = append(jul, fmt.Sprintf(`{"type":"message","user":"U3","text":"Ann Smith here: snacks ready","ts":"%d.000100"}`, july.Add(6*time.Hour).Unix()))
	files["general/2015-06-10.json"] = "[" + strings.Join(jun, ",") + "]"
	files["general/2015-07-03.json"] = "[" + strings.Join(jul, ",") + "]"
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

type browseResult struct {
	Chunks []struct {
		SourceID    string `json:"source_id"`
		TimestampMS int64  `json:"timestamp_ms"`
		Snippet     string `json:"snippet"`
	} `json:"chunks"`
	Total    int    `json:"total"`
	Hint     string `json:"hint"`
	Resolved []struct {
		Filter, Value string
		To            []string
	} `json:"resolved"`
}

// since_ms/until_ms take dates as people type them: "2015-07-01" keeps July,
// "2015-06" as until keeps all of June and nothing after it.
func TestTimeFiltersTakeDates(t *testing.T) {
	e := newCLIEnv(t)
	if _, errOut, code := e.run("", "ingest", writePeopleCorpus(t, t.TempDir())); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	cs := e.mcpSession(t, "smoke")
	july := time.Date(2015, 7, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	var since browseResult
	callJSON(t, cs, "tree.browse", map[string]any{"since_ms": "2015-07-01", "k": 50}, &since)
	if since.Total == 0 {
		t.Fatalf("since 2015-07-01: nothing: %+v", since)
	}
	for _, c := range since.Chunks {
		if c.TimestampMS < july {
			t.Errorf("since 2015-07-01 kept %s at %d", c.SourceID, c.TimestampMS)
		}
	}
	var until browseResult
	callJSON(t, cs, "tree.browse", map[string]any{"until_ms": "2015-06", "k": 50}, &until)
	if until.Total == 0 {
		t.Fatalf("until 2015-06: nothing: %+v", until)
	}
	for _, c := range until.Chunks {
		if c.TimestampMS >= july || !strings.HasSuffix(c.SourceID, "/2015-06") {
			t.Errorf("until 2015-06 kept %s at %d", c.SourceID, c.TimestampMS)
		}
	}
	var rfc browseResult
	callJSON(t, cs, "tree.browse", map[string]any{"since_ms": "2015-06-01T00:00:00Z", "until_ms": "2015-07-31", "k": 50}, &rfc)
	if rfc.Total != since.Total+until.Total {
		t.Errorf("June and July by RFC 3339 and day: %d chunks, want %d + %d", rfc.Total, since.Total, until.Total)
	}
}

// A first name stands for the person whose name starts with it (Micah → Micah
// Stubbs, who wrote most of #general, not only the "micah" handle mentioned
// once); an ambiguous one (Ann) is read as each Ann and the hint names them.
func TestFirstNameResolvesToThePerson(t *testing.T) {
	e := newCLIEnv(t)
	if _, errOut, code := e.run("", "ingest", writePeopleCorpus(t, t.TempDir())); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	cs := e.mcpSession(t, "smoke")
	var micah, full browseResult
	callJSON(t, cs, "tree.browse", map[string]any{"entity_ids": []string{"Micah"}, "k": 50}, &micah)
	callJSON(t, cs, "tree.browse", map[string]any{"entity_ids": []string{"Micah Stubbs"}, "k": 50}, &full)
	if len(micah.Resolved) != 1 || !strings.Contains(strings.Join(micah.Resolved[0].To, ","), "person:micah stubbs") {
		t.Errorf("Micah resolved to %+v, want person:micah stubbs among them", micah.Resolved)
	}
	if full.Total == 0 || micah.Total < full.Total {
		t.Errorf("Micah: %d chunks, Micah Stubbs: %d; want Micah to find at least his", micah.Total, full.Total)
	}
	var ann browseResult
	callJSON(t, cs, "tree.browse", map[string]any{"entity_ids": []string{"Ann"}, "k": 50}, &ann)
	to := ""
	if len(ann.Resolved) == 1 {
		to = strings.Join(ann.Resolved[0].To, ",")
	}
	if !strings.Contains(to, "person:ann lee") || !strings.Contains(to, "person:ann smith") ||
		!strings.Contains(ann.Hint, "person:ann lee") || !strings.Contains(ann.Hint, "person:ann smith") || ann.Total == 0 {
		t.Errorf("Ann: resolved %+v, hint %q, %d chunks; want both Anns and a hint naming them", ann.Resolved, ann.Hint, ann.Total)
	}
}

// forget takes every source id the tools take: a conversation without its month
// stands for all its months, listed by --dry-run, then deleted.
func TestForgetAConversation(t *testing.T) {
	e := newCLIEnv(t)
	if _, errOut, code := e.run("", "ingest", writePeopleCorpus(t, t.TempDir())); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	out, errOut, code := e.run("", "forget", "--dry-run", "slack:#general")
	if code != 0 || !strings.Contains(out, "slack:#general/2015-06") || !strings.Contains(out, "slack:#general/2015-07") || !strings.Contains(out, "would forget 2 sources") {
		t.Fatalf("forget --dry-run slack:#general: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = e.run("", "forget", "--json", "slack:#general")
	var res struct {
		Sources []struct {
			SourceID string `json:"source_id"`
		}
		NotFound []string `json:"not_found"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Sources) != 2 || len(res.NotFound) != 0 {
		t.Fatalf("forget slack:#general: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := e.run("", "forget", "slack:#nowhere"); code != 1 || !strings.Contains(errOut, "slack:#nowhere") {
		t.Errorf("forget an unknown conversation: exit %d %s", code, errOut)
	}
	cs := e.mcpSession(t, "smoke")
	var left browseResult
	callJSON(t, cs, "tree.browse", map[string]any{"source_ids": []string{"slack:#general"}, "k": 5}, &left)
	if left.Total != 0 {
		t.Errorf("%d chunks of slack:#general left after forget", left.Total)
	}
}
