package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeChatCorpus writes an mbox from Neeraj Tandon, a Slack export whose
// #general has messages in two months, and a Telegram export of the group
// "Sample Chat" (id 69420).
func writeChatCorpus(t *testing.T, dir string) []string {
	t.Helper()
	files := map[string]string{
		"mail.mbox": `From neeraj@tandon.example Tue Feb  3 09:00:00 2026
From: Neeraj Tandon <neeraj@tandon.example>
To: Ann Lee <ann@lee.example>
Subject: Quarterly budget
Date: Tue, 3 Feb 2026 09:00:00 +0000
Message-ID: <budget-1@tandon.example>

Ann, the quarterly budget needs your sign-off by Friday.
`,
		"slack/users.json":              `[{"id":"U1","name":"ana","real_name":"Ana Souza"}]`,
		"slack/channels.json":           `[{"id":"C1","name":"general"}]`,
		"slack/general/2026-01-05.json": `[{"type":"message","user":"U1","text":"January standup moved to ten","ts":"1767600100.000200"}]`,
		"slack/general/2026-02-02.json": `[{"type":"message","user":"U1","text":"February retro notes are up","ts":"1770000000.000100"}]`,
		"telegram/result.json": `{"name": "Sample Chat", "type": "private_group", "id": 69420, "messages": [
  {"id": 1, "type": "message", "date": "2022-09-02T16:04:05", "date_unixtime": "1662134645", "from": "Alice", "from_id": "user1", "text": "Picnic on Saturday at the lake"}]}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return []string{filepath.Join(dir, "mail.mbox"), filepath.Join(dir, "slack"), filepath.Join(dir, "telegram")}
}

// call runs a tool and decodes its structured result.
func callJSON(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if res.IsError {
		t.Fatalf("%s %v: %v", name, args, res.Content[0].(*mcp.TextContent).Text)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, b)
	}
	checkOutputSchema(t, cs, name, b)
}

// checkOutputSchema fails the test unless result is valid against the output
// schema tools/list gives for name.
func checkOutputSchema(t *testing.T, cs *mcp.ClientSession, name string, result []byte) {
	t.Helper()
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if tl.Name != name {
			continue
		}
		raw, _ := json.Marshal(tl.OutputSchema)
		var sch jsonschema.Schema
		if err := json.Unmarshal(raw, &sch); err != nil {
			t.Fatalf("%s output schema: %v", name, err)
		}
		rs, err := sch.Resolve(nil)
		if err != nil {
			t.Fatalf("%s output schema: %v", name, err)
		}
		var v any
		_ = json.Unmarshal(result, &v)
		if err := rs.Validate(v); err != nil {
			t.Errorf("%s result is not valid against its outputSchema: %v\n%s", name, err, result)
		}
		return
	}
	t.Fatalf("%s is not listed", name)
}

type browseOut struct {
	Chunks []struct {
		SourceKind string `json:"source_kind"`
		SourceID   string `json:"source_id"`
	} `json:"chunks"`
	Total    int    `json:"total"`
	Hint     string `json:"hint"`
	Resolved []struct {
		Filter, Value string
		To            []string
	} `json:"resolved"`
}

type sourcesOut struct {
	Sources []struct {
		SourceKind  string   `json:"source_kind"`
		SourceID    string   `json:"source_id"`
		DisplayName string   `json:"display_name"`
		Title       string   `json:"title"`
		ChunkCount  int      `json:"chunk_count"`
		Months      []string `json:"months"`
	} `json:"sources"`
	Total int    `json:"total"`
	Hint  string `json:"hint"`
}

// Each filter a person types in issue 26 returns what they meant, or a hint
// naming the valid values, through a real `mcp` process and store.
func TestFiltersPeopleType(t *testing.T) {
	e := newCLIEnv(t)
	if _, errOut, code := e.run("", append([]string{"ingest"}, writeChatCorpus(t, t.TempDir())...)...); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, errOut)
	}
	cs := e.mcpSession(t, "smoke")

	t.Run("source_kinds mail", func(t *testing.T) {
		var out browseOut
		callJSON(t, cs, "tree.browse", map[string]any{"source_kinds": []string{"mail"}, "k": 10}, &out)
		if out.Total == 0 || out.Chunks[0].SourceKind != "email" || len(out.Resolved) != 1 || out.Resolved[0].To[0] != "email" {
			t.Errorf("%+v", out)
		}
	})
	t.Run("list_sources kinds slack", func(t *testing.T) {
		var out sourcesOut
		callJSON(t, cs, "tree.list_sources", map[string]any{"kinds": []string{"slack"}}, &out)
		if out.Total != 2 {
			t.Errorf("total %d, want the 2 months of #general: %+v", out.Total, out)
		}
		for _, s := range out.Sources {
			if !strings.HasPrefix(s.SourceID, "slack:") {
				t.Errorf("not a Slack source: %+v", s)
			}
		}
	})
	t.Run("top_entities kind people", func(t *testing.T) {
		var out struct {
			Entities []struct{ EntityID, Kind string } `json:"entities"`
			Total    int                               `json:"total"`
		}
		callJSON(t, cs, "tree.top_entities", map[string]any{"kind": "people"}, &out)
		if out.Total == 0 {
			t.Fatalf("no people: %+v", out)
		}
		for _, en := range out.Entities {
			if en.Kind != "person" {
				t.Errorf("kind people listed %+v", en)
			}
		}
	})
	t.Run("source_ids channel without month", func(t *testing.T) {
		var out browseOut
		callJSON(t, cs, "tree.browse", map[string]any{"source_ids": []string{"slack:#general"}}, &out)
		months := map[string]bool{}
		for _, c := range out.Chunks {
			months[c.SourceID] = true
		}
		if out.Total < 2 || !months["slack:#general/2026-01"] || !months["slack:#general/2026-02"] || len(out.Resolved) != 1 || len(out.Resolved[0].To) != 2 {
			t.Errorf("%+v", out)
		}
	})
	t.Run("entity_ids a name", func(t *testing.T) {
		var out browseOut
		callJSON(t, cs, "tree.browse", map[string]any{"entity_ids": []string{"Neeraj Tandon"}}, &out)
		if out.Total == 0 || out.Chunks[0].SourceKind != "email" || len(out.Resolved) != 1 || !slices.Contains(out.Resolved[0].To, "person:neeraj tandon") {
			t.Errorf("%+v", out)
		}
		callJSON(t, cs, "tree.browse", map[string]any{"entity_ids": []string{"neeraj@tandon.example"}}, &out)
		if out.Total == 0 || !slices.Contains(out.Resolved[0].To, "email:neeraj@tandon.example") {
			t.Errorf("address: %+v", out)
		}
	})
	t.Run("list_sources query a group's name", func(t *testing.T) {
		var out sourcesOut
		callJSON(t, cs, "tree.list_sources", map[string]any{"query": "Sample Chat"}, &out)
		if out.Total != 1 || !strings.HasPrefix(out.Sources[0].SourceID, "telegram:69420/") {
			t.Errorf("%+v", out)
		}
	})
	t.Run("list_sources one row per conversation", func(t *testing.T) {
		var out sourcesOut
		callJSON(t, cs, "tree.list_sources", map[string]any{"kinds": []string{"chat"}, "group": "conversation"}, &out)
		var general *struct {
			SourceKind  string   `json:"source_kind"`
			SourceID    string   `json:"source_id"`
			DisplayName string   `json:"display_name"`
			Title       string   `json:"title"`
			ChunkCount  int      `json:"chunk_count"`
			Months      []string `json:"months"`
		}
		for i := range out.Sources {
			if out.Sources[i].SourceID == "slack:#general" {
				general = &out.Sources[i]
			}
		}
		if out.Total != 2 || general == nil || !slices.Equal(general.Months, []string{"2026-02", "2026-01"}) || general.ChunkCount < 2 {
			t.Errorf("%+v", out)
		}
	})
	t.Run("values matching nothing get hints", func(t *testing.T) {
		for _, c := range []struct {
			tool string
			args map[string]any
			want string
		}{
			{"tree.browse", map[string]any{"source_kinds": []string{"fax"}}, "chat, email or document"},
			{"tree.browse", map[string]any{"source_ids": []string{"slack:#nowhere"}}, "tree.list_sources"},
			{"tree.browse", map[string]any{"entity_ids": []string{"Nobody Known"}}, "tree.top_entities"},
			{"tree.list_sources", map[string]any{"kinds": []string{"fax"}}, "chat, email or document"},
			{"tree.top_entities", map[string]any{"kind": "planets"}, "person, "},
		} {
			var out struct {
				Total int    `json:"total"`
				Hint  string `json:"hint"`
			}
			callJSON(t, cs, c.tool, c.args, &out)
			if out.Total != 0 || !strings.Contains(out.Hint, c.want) {
				t.Errorf("%s %v: total %d, hint %q; want a hint with %q", c.tool, c.args, out.Total, out.Hint, c.want)
			}
		}
	})
}
