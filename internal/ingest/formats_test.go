package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

func TestSlackExport(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"slack/users.json": `[{"id":"U1","name":"ana.souza","real_name":"Ana Souza","profile":{"real_name":"Ana Souza","display_name":"ana"}},
			{"id":"U2","name":"sam","real_name":"Sam Rivera","profile":{"real_name":"Sam Rivera"}}]`,
		"slack/channels.json": `[{"id":"C1","name":"phoenix"},{"id":"C2","name":"general"},{"id":"C3","name":"empty"}]`,
		"slack/phoenix/2026-01-05.json": `[
			{"type":"message","subtype":"channel_join","user":"U2","text":"<@U2> has joined the channel","ts":"1767600000.000100"},
			{"type":"message","user":"U1","text":"<@U2> pricing &amp; tiers are in <https://docs.example/p|the doc>, see <#C2|general> &lt;3","ts":"1767600100.000200","thread_ts":"1767600100.000200"},
			{"type":"message","user":"U2","text":"later in the day: <https://plain.example/x> and <!here>","ts":"1767630000.000300"}
		]`,
		// a thread reply stored in an earlier file still lands in time order
		"slack/phoenix/2026-01-04.json": `[{"type":"message","user":"U2","text":"reply &gt; original","ts":"1767600200.000400","thread_ts":"1767600100.000200"}]`,
		"slack/general/2026-01-05.json": `[{"type":"message","user":"U1","text":"no ts here"},{"type":"message","user":"U1","text":"bad ts","ts":"yesterday"},
			{"type":"message","user":"U2","text":"this one is fine","ts":"1767600000.000001"}]`,
		"slack/general/2026-01-06.json": `[{"type":"message","user":"U1","text":"broken`,
	})
	c, sum := runOn(t, Options{}, dir)
	ph := c.byID("slack:#phoenix/2026-01")
	if ph == nil || ph.Kind != "chat" || ph.Provider != "slack" {
		t.Fatalf("phoenix source = %+v", ph)
	}
	if len(ph.Messages) != 3 {
		t.Fatalf("phoenix messages = %d, want 3 (join skipped)", len(ph.Messages))
	}
	m := ph.Messages[0]
	if m.Ref != "slack:phoenix:1767600100.000200" || m.Author != "Ana Souza" || m.AuthorAddr != "ana.souza" || m.TimestampMS != 1767600100000 {
		t.Errorf("first message = %+v", m)
	}
	if m.Text != "Sam Rivera pricing & tiers are in the doc (https://docs.example/p), see #general <3" {
		t.Errorf("slack markup not resolved: %q", m.Text)
	}
	if ph.Messages[1].Ref != "slack:phoenix:1767600200.000400" ||
		ph.Messages[1].Text != "reply > original" || ph.Messages[1].ReplyTo != "slack:phoenix:1767600100.000200" {
		t.Errorf("thread reply out of order or unescaped wrongly: %+v", ph.Messages[1])
	}
	if ph.Messages[2].Text != "later in the day: https://plain.example/x and @here" {
		t.Errorf("bare link / special mention: %q", ph.Messages[2].Text)
	}
	gen := c.byID("slack:#general/2026-01")
	if gen == nil || len(gen.Messages) != 1 || gen.Messages[0].Text != "this one is fine" {
		t.Fatalf("general must keep its good message: %+v", gen)
	}
	if c.byID("slack:#empty/2026-01") != nil {
		t.Errorf("a channel without a folder is no source")
	}
	if sum.Failures != 2 || len(sum.Errors) != 2 {
		t.Fatalf("want 2 failures (missing ts, broken JSON), got %v", sum.Errors)
	}
	var sawTS, sawJSON bool
	for _, e := range sum.Errors {
		switch filepath.Base(e.Path) {
		case "2026-01-05.json":
			sawTS = strings.Contains(e.Error(), "general") && strings.Contains(e.Error(), "message 1 (no ts)") && strings.Contains(e.Error(), `message 2 (ts "yesterday" is not a number)`)
		case "2026-01-06.json":
			sawJSON = strings.Contains(e.Error(), "not valid JSON") && strings.Contains(e.Error(), "byte")
		}
	}
	if !sawTS || !sawJSON {
		t.Errorf("error lines must name the day file and what is wrong: %v", sum.Errors)
	}
}

func TestChatBatchAndReferenceShapes(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"batches/wa.json": `{"platform":"whatsapp","channel_label":"Family","messages":[
			{"author":"Rosa","timestamp":1767700000000,"text":"second","source_ref":"wa:2"},
			{"author":"Ana","timestamp":1767600000000,"text":" first ","source_ref":"wa:1"}]}`,
		"thread.json": `{"provider":"gmail","thread_subject":"Re: Lease renewal","messages":[
			{"from":"Ana Souza <ana@mailbox.example>","to":["sam@kestrel.example"],"cc":[],"subject":"Lease renewal","sent_at":1767600000000,
			 "body":"Renew for two years?\n\nOn Mon, Jan 5, 2026 at 3:04 PM Sam <sam@kestrel.example> wrote:\n> old","source_ref":"<lease-1@x.example>"},
			{"from":"sam@kestrel.example","to":["ana@mailbox.example"],"subject":"Re: Lease renewal","sent_at":"2026-01-06T10:00:00Z","body":"Yes."}]}`,
		"doc-ms.json":     `{"provider":"notion","title":"Packing list","body":"Passport\nCharger","modified_at":1767600000000,"source_ref":"notion:abc"}`,
		"doc-rfc.json":    `{"title":"Rfc","body":"x","modified_at":"2026-01-05T08:00:00Z"}`,
		"doc-numstr.json": `{"title":"Num","body":"y","modified_at":"1767600000000"}`,
		"other.json":      `{"name":"some-package","version":"1.0.0"}`,
	})
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 {
		t.Fatalf("failures: %v", sum.Errors)
	}
	wa := c.byID("whatsapp:Family/2026-01")
	if wa == nil || wa.Title != "Family (whatsapp) (2026-01)" || !wa.Merge || wa.Kind != "chat" || len(wa.Messages) != 2 || wa.Messages[0].Ref != "wa:1" || wa.Messages[0].Text != "first" {
		t.Fatalf("chat batch = %+v", wa)
	}
	th := c.byID("email:lease-1@x.example")
	if th == nil || th.Title != "Lease renewal" || th.Provider != "gmail" || len(th.Messages) != 2 {
		t.Fatalf("email thread = %+v", th)
	}
	if th.Messages[0].Text != "Renew for two years?" || th.Messages[0].Author != "Ana Souza" || th.Messages[0].AuthorAddr != "ana@mailbox.example" {
		t.Errorf("email thread message 1 = %+v", th.Messages[0])
	}
	if th.Messages[1].TimestampMS != time.Date(2026, 1, 6, 10, 0, 0, 0, time.UTC).UnixMilli() || th.Messages[1].Ref == "" {
		t.Errorf("email thread message 2 = %+v", th.Messages[1])
	}
	if d := c.byID("doc:notion:abc"); d == nil || d.Provider != "notion" || d.Messages[0].TimestampMS != 1767600000000 || d.Messages[0].Ref != "notion:abc" {
		t.Errorf("DocumentInput (ms) = %+v", d)
	}
	if d := c.byID("doc:doc-rfc.json"); d == nil || d.Provider != "unknown" || d.Messages[0].TimestampMS != time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC).UnixMilli() {
		t.Errorf("DocumentInput (RFC 3339) = %+v", d)
	}
	if d := c.byID("doc:doc-numstr.json"); d == nil || d.Messages[0].TimestampMS != 1767600000000 {
		t.Errorf("DocumentInput (numeric string) = %+v", d)
	}
	if len(c.srcs) != 5 || sum.Skipped != 1 {
		t.Errorf("an unrelated JSON file is skipped, not ingested: %d sources, %d skipped", len(c.srcs), sum.Skipped)
	}
}

func TestBadJSON(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"not-json.json":     "{\"platform\": \"slack\", \"channel_label\": \"#eng\", \"messages\": [\n  {\"author\": \"Ana\", \"text\": \"unterminated\n]}\n<html>",
		"wrong-schema.json": `{"platform": 42, "channel_label": ["#eng"], "messages": {"author": null, "timestamp": "yesterday"}}`,
		"bad-ts.json":       `{"platform":"x","channel_label":"y","messages":[{"author":"a","timestamp":"yesterday","text":"t"}]}`,
		"deep.json":         strings.Repeat("[", 10000) + "1" + strings.Repeat("]", 10000),
		"array.json":        `[{"platform":"x"}]`,
		"empty.json":        "",
	})
	c, sum := runOn(t, Options{}, dir)
	if len(c.srcs) != 0 {
		t.Errorf("nothing may be ingested from bad JSON: %+v", c.srcs)
	}
	want := map[string]string{
		"not-json.json":     "byte ",
		"wrong-schema.json": `field "platform"`,
		"bad-ts.json":       `message 1: field "timestamp"`,
		"deep.json":         "nested deeper than 64",
		"array.json":        "top-level JSON array",
	}
	got := map[string]string{}
	for _, e := range sum.Errors {
		got[filepath.Base(e.Path)] = e.Error()
	}
	for f, sub := range want {
		if !strings.Contains(got[f], sub) {
			t.Errorf("%s: error %q should contain %q", f, got[f], sub)
		}
	}
	if sum.Failures != len(want) {
		t.Errorf("failures = %d, want %d (empty file is a note): %v", sum.Failures, len(want), sum.Errors)
	}
}

func TestDocuments(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"docs/projects/phoenix.md": "---\ntitle: \"Phoenix: rollout \\\"slip\\\"\"\ndate: 2026-02-03\ntags: [launch, phoenix]\n---\n\n# Ignored heading\n\nThe rollout slips a week.\n",
		"docs/notes/list.md":       "---\ntitle: Lists\ntags:\n  - a\n  - b\n---\nbody\n",
		"docs/2026-01-05-sync.md":  "# Design sync\n\nNotes.\n",
		"docs/plain.txt":           "just text\n",
		"docs/utf16.md":            string(utf16leBOM("# Wide\n\nSaved as UTF-16.\n")),
		"docs/binary.md":           "\x00\x01\x02binary",
		"docs/empty.md":            "",
		"docs/invalid.txt":         "caf\xe9 and \xe2\x82 cut\n",
		"docs/huge.txt":            strings.Repeat("word ", (readkit.MaxLineBytes/5)+10),
		"docs/.hidden.md":          "secret",
		"docs/image.png":           "\x89PNG",
	})
	mtime := time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "docs/plain.txt"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	c, sum := runOn(t, Options{}, dir)
	// a document's source id is its absolute path (two roots never collide); its
	// ref is the path relative to the ingest root
	docID := func(rel string) string { return "doc:" + filepath.Join(dir, filepath.FromSlash(rel)) }
	p := c.byID(docID("docs/projects/phoenix.md"))
	if p == nil || p.Title != `Phoenix: rollout "slip"` || strings.Join(p.Tags, ",") != "launch,phoenix" || p.Kind != "document" || p.Provider != "markdown" {
		t.Fatalf("front matter = %+v", p)
	}
	if m := p.Messages[0]; m.Ref != "docs/projects/phoenix.md" || m.TimestampMS != time.Date(2026, 2, 3, 0, 0, 0, 0, time.UTC).UnixMilli() || strings.Contains(m.Text, "title:") || !strings.Contains(m.Text, "The rollout slips a week.") {
		t.Errorf("document message = %+v", m)
	}
	if l := c.byID(docID("docs/notes/list.md")); l == nil || strings.Join(l.Tags, ",") != "a,b" || l.Title != "Lists" {
		t.Errorf("list-form tags = %+v", l)
	}
	if s := c.byID(docID("docs/2026-01-05-sync.md")); s == nil || s.Title != "Design sync" || s.Messages[0].TimestampMS != time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).UnixMilli() {
		t.Errorf("heading title and file-name date = %+v", s)
	}
	if s := c.byID(docID("docs/plain.txt")); s == nil || s.Title != "plain" || s.Provider != "text" || s.Messages[0].TimestampMS != mtime.UnixMilli() {
		t.Errorf("file-name title and mtime = %+v", s)
	}
	if s := c.byID(docID("docs/utf16.md")); s == nil || s.Title != "Wide" {
		t.Errorf("UTF-16 document = %+v", s)
	}
	if s := c.byID(docID("docs/invalid.txt")); s == nil || !strings.Contains(s.Messages[0].Text, "caf\uFFFD and \uFFFD") {
		t.Errorf("invalid UTF-8 must be replaced, never stored: %+v", s)
	}
	if len(c.srcs) != 6 {
		t.Errorf("sources = %d, want 6", len(c.srcs))
	}
	got := map[string]string{}
	for _, e := range sum.Errors {
		got[filepath.Base(e.Path)] = e.Error()
	}
	if !strings.Contains(got["binary.md"], "binary") || !strings.Contains(got["huge.txt"], "line 1") || len(sum.Errors) != 2 {
		t.Errorf("errors = %v", sum.Errors)
	}
	if sum.Skipped != 2 || sum.SkippedBy[readkit.ReasonHiddenFile]+sum.SkippedBy[readkit.ReasonHiddenFolder] != 1 {
		t.Errorf("skipped = %d %v, want 2 (image.png and the hidden file, each named)", sum.Skipped, sum.SkippedBy)
	}
	// ingesting the docs folder itself makes refs relative to it
	c2, _ := runOn(t, Options{}, filepath.Join(dir, "docs"))
	if p2 := c2.byID(docID("docs/projects/phoenix.md")); p2 == nil || p2.Messages[0].Ref != "projects/phoenix.md" {
		t.Errorf("refs must be relative to the ingest root: %+v", p2)
	}
}

func utf16leBOM(s string) []byte {
	out := []byte{0xff, 0xfe}
	for _, r := range s {
		out = append(out, byte(r), byte(r>>8))
	}
	return out
}

func TestWalkSymlinkLoopAndKinds(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{"a/note.md": "# A\n\ntext\n", "a/mail.txt": "From the desk of Ana\n\nNotes, not mail.\n"})
	for _, l := range []struct{ name, target string }{{"a/self", "."}, {"a/parent", ".."}} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Fatalf("symlink: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &collector{}
	sum, err := Run(ctx, c, []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.srcs) != 2 || sum.Skipped != 2 {
		t.Errorf("symlinks must not be followed: %d sources, %d skipped", len(c.srcs), sum.Skipped)
	}
	// a .txt that starts with "From " but no envelope date is a document; forcing
	// mbox reads it as one (and fails it: it holds no message)
	c2, sum2 := runOn(t, Options{Kind: KindMbox}, filepath.Join(dir, "a", "mail.txt"))
	if sum2.Files != 1 || len(c2.srcs) != 0 || sum2.Failures != 1 {
		t.Errorf("forced mbox: %+v %+v", sum2, c2.srcs)
	}
	if _, err := Run(context.Background(), &collector{}, []string{dir}, Options{Kind: "pdf"}); err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Errorf("bad kind error = %v", err)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if _, err := Run(cancelled, &collector{}, []string{dir}, Options{}); err == nil {
		t.Errorf("a cancelled run must say so")
	}
	s := &Summary{Files: 3, Sources: 2, ChunksNew: 5, Failures: 1, Seconds: 0.25}
	s.Skipped, s.SkippedBy, s.Warnings = 3, map[string]int{readkit.ReasonUnknown: 2, readkit.ReasonSymlink: 1}, 4
	if s.Line() != "ingest: 3 files, 2 sources, 5 chunks new, 0 unchanged, 0 removed, 0 entities, 1 failures, 3 skipped (2 not a known mail, chat or document format; 1 symbolic link: not followed), 4 warnings, 0.2 s" &&
		s.Line() != "ingest: 3 files, 2 sources, 5 chunks new, 0 unchanged, 0 removed, 0 entities, 1 failures, 3 skipped (2 not a known mail, chat or document format; 1 symbolic link: not followed), 4 warnings, 0.3 s" {
		t.Errorf("summary line = %q", s.Line())
	}
}
