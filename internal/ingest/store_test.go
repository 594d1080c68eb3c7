package ingest

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"mime"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

func openStore(t *testing.T) *memtree.Store {
	t.Helper()
	st, err := memtree.Open(filepath.Join(t.TempDir(), "memory_tree", "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// sourceChunks returns the full chunks of one source.
func sourceChunks(t *testing.T, st *memtree.Store, sourceID string) []abi.Chunk {
	t.Helper()
	ctx := context.Background()
	var out []abi.Chunk
	for off := 0; ; off += memtree.MaxK {
		res, err := memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{SourceIDs: []string{sourceID}, K: memtree.MaxK, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Chunks {
			c, err := memory.Default(st).GetChunk(ctx, abi.ChunkGetRequest{ID: h.ID})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c.Chunk)
		}
		if len(res.Chunks) < memtree.MaxK {
			return out
		}
	}
}

// TestIngestIntoStore runs self-made fixtures through a real SQLite store and
// checks what was stored and that re-ingesting adds nothing.
func TestIngestIntoStore(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"mail/inbox.mbox": "From ana@mailbox.example Mon Jan  5 10:00:00 2026\n" +
			"From: =?iso-8859-1?Q?Jos=E9_M=FCller?= <jose@postbox.example>\nTo: Sam Rivera <sam@kestrel.example>\nSubject: Brakes\n" +
			"Date: Mon, 05 Jan 2026 10:00:00 +0000\nMessage-ID: <s1@x.example>\nContent-Type: text/plain; charset=iso-8859-1\n\nThe brake pads are worn, says M\xfcller.\n\n" +
			"From sam@kestrel.example Mon Jan  5 12:00:00 2026\n" +
			"From: Sam Rivera <sam@kestrel.example>\nTo: =?iso-8859-1?Q?Jos=E9_M=FCller?= <jose@postbox.example>\nSubject: Re: Brakes\n" +
			"Date: Mon, 05 Jan 2026 12:00:00 +0000\nMessage-ID: <s2@x.example>\nIn-Reply-To: <s1@x.example>\nReferences: <s1@x.example>\n\n" +
			"Book the garage.\n\n-- \nSam\n\nOn Mon, Jan 5, 2026 at 10:00 AM Jos\xe9 wrote:\n> The brake pads are worn\n",
		"slack/users.json":              `[{"id":"U1","name":"ana","real_name":"Ana Souza"}]`,
		"slack/channels.json":           `[{"id":"C1","name":"phoenix"}]`,
		"slack/phoenix/2026-01-05.json": `[{"type":"message","user":"U1","text":"<@U1> ships #launch &amp; more","ts":"1767600100.000200"}]`,
		"docs/a.md":                     "---\ntitle: Alpha\ndate: 2026-01-07\n---\n\nAlpha notes.\n",
	})
	st := openStore(t)
	ctx := context.Background()
	sum, err := Run(ctx, st, []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failures != 0 || sum.Sources != 3 || sum.ChunksNew == 0 || sum.Entities == 0 {
		t.Fatalf("summary: %s %v", sum.Line(), sum.Errors)
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sources["email"] != 1 || stats.Sources["chat"] != 1 || stats.Sources["document"] != 1 {
		t.Errorf("sources per kind = %v", stats.Sources)
	}
	chunks := sourceChunks(t, st, "email:s1@x.example")
	var all strings.Builder
	refs := map[string]bool{}
	for _, c := range chunks {
		all.WriteString(c.Text + "\n")
		for _, r := range c.SourceRefs {
			refs[r] = true
		}
		refs[c.SourceRef] = true
	}
	text := all.String()
	mustContain(t, "stored thread", text, "José Müller", "says Müller", "Book the garage.")
	mustNotContain(t, "stored thread", text, "wrote:", "> The brake", "\n-- ")
	if !refs["s1@x.example"] || !refs["s2@x.example"] {
		t.Errorf("thread chunks must carry both message refs: %v", refs)
	}
	slack := sourceChunks(t, st, "slack:#phoenix/2026-01")
	if len(slack) != 1 || !strings.Contains(slack[0].Text, "Ana Souza ships #launch & more") {
		t.Errorf("slack chunk = %+v", slack)
	}
	ents, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{Kind: "person", K: 50})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range ents.Entities {
		if e.EntityID == "person:josé müller" && e.Count > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("person:josé müller missing from %+v", ents.Entities)
	}
	again, err := Run(ctx, st, []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ChunksNew != 0 || again.ChunksUnchanged != sum.ChunksNew || again.ChunksRemoved != 0 {
		t.Errorf("re-ingest must add nothing: first %s, again %s", sum.Line(), again.Line())
	}
}

// sharedData locates ../shared/data relative to the repository root.
func sharedData() string {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	return filepath.Join(root, "..", "shared", "data")
}

// genCorpus generates the default corpus (with bad/) and moves bad/ to its own folder.
func genCorpus(t *testing.T) (corpus, bad string) {
	t.Helper()
	gen := filepath.Join(sharedData(), "gencorpus")
	if _, err := os.Stat(filepath.Join(gen, "main.go")); err != nil {
		t.Skipf("corpus generator not found at %s: corpus-based checks need ../shared/data", gen)
	}
	base := t.TempDir()
	corpus = filepath.Join(base, "corpus")
	cmd := exec.Command("go", "run", "-C", gen, ".", "-out", corpus, "-bad")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gencorpus: %v\n%s", err, out)
	}
	bad = filepath.Join(base, "bad")
	if err := os.Rename(filepath.Join(corpus, "bad"), bad); err != nil {
		t.Fatal(err)
	}
	return corpus, bad
}

type evalItem struct {
	Ref   string `json:"source_ref"`
	Kind  string `json:"kind"`
	Path  string `json:"path"`
	Group string `json:"group"`
	Time  string `json:"time"`
}

func readItems(t *testing.T, corpus string) []evalItem {
	t.Helper()
	f, err := os.Open(filepath.Join(corpus, "eval", "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []evalItem
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var it evalItem
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			t.Fatal(err)
		}
		out = append(out, it)
	}
	return out
}

// TestCorpusIntoStore ingests the generated default corpus into a real store.
func TestCorpusIntoStore(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus ingest skipped in -short mode")
	}
	corpus, _ := genCorpus(t)
	items := readItems(t, corpus)
	st := openStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sum, err := Run(ctx, st, []string{corpus}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(sum.Line())
	if sum.Failures != 0 {
		t.Fatalf("the default corpus must ingest cleanly: %v", sum.Errors)
	}
	// expected sources per kind, from the generator's own labels: a chat
	// conversation (batch channel or Slack channel) is one source per month
	groups := map[string]bool{}
	docs, batches := 0, map[string]bool{}
	channels := map[string]bool{}
	batchConv := map[string]string{} // batch file → platform:channel_label
	month := func(it evalItem) string {
		tm, err := time.Parse(time.RFC3339, it.Time)
		if err != nil {
			t.Fatalf("item %s: time %q: %v", it.Ref, it.Time, err)
		}
		return tm.UTC().Format("2006-01")
	}
	byGroup := map[string][]string{}
	for _, it := range items {
		switch it.Kind {
		case "email":
			groups[it.Group] = true
			byGroup[it.Group] = append(byGroup[it.Group], it.Ref)
		case "doc":
			docs++
		case "chat":
			conv, ok := batchConv[it.Path]
			if !ok {
				var cb struct {
					Platform     string `json:"platform"`
					ChannelLabel string `json:"channel_label"`
				}
				b, err := os.ReadFile(filepath.Join(corpus, filepath.FromSlash(it.Path)))
				if err != nil || json.Unmarshal(b, &cb) != nil {
					t.Fatalf("chat batch %s: %v", it.Path, err)
				}
				conv = cb.Platform + ":" + cb.ChannelLabel
				batchConv[it.Path] = conv
			}
			batches[conv+"/"+month(it)] = true
		case "slack":
			channels[strings.Split(it.Ref, ":")[1]+"/"+month(it)] = true
		}
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sources["email"] != len(groups) || stats.Sources["document"] != docs || stats.Sources["chat"] != len(batches)+len(channels) {
		t.Errorf("sources per kind = %v, want email %d, document %d, chat %d", stats.Sources, len(groups), docs, len(batches)+len(channels))
	}
	// the longest thread: every message stored under its root, bodies cleaned
	var root string
	for g, refs := range byGroup {
		if len(refs) > len(byGroup[root]) || len(refs) == len(byGroup[root]) && g < root {
			root = g
		}
	}
	chunks := sourceChunks(t, st, "email:"+root)
	stored := map[string]bool{}
	var text strings.Builder
	for _, c := range chunks {
		for _, r := range c.SourceRefs {
			stored[r] = true
		}
		stored[c.SourceRef] = true
		text.WriteString(c.Text + "\n")
	}
	for _, r := range byGroup[root] {
		if !stored[r] {
			t.Errorf("thread %s: message %s not stored under it", root, r)
		}
	}
	body := text.String()
	if regexp.MustCompile(`(?m)^>|wrote:\s*$|^-- ?$|^_{10,}$|CONFIDENTIALITY NOTICE`).MatchString(body) {
		t.Errorf("thread %s keeps quoted history, a signature or a footer:\n%s", root, body)
	}
	if n := strings.Count(body, "From: "); n != len(byGroup[root]) {
		t.Errorf("thread %s: %d From lines for %d messages (participants)", root, n, len(byGroup[root]))
	}
	// ISO-8859-1 names, decoded from the raw mbox independently of the parser
	raw, err := os.ReadFile(filepath.Join(corpus, "mail", "inbox.mbox"))
	if err != nil {
		t.Fatal(err)
	}
	latin := regexp.MustCompile(`(?mi)^From: (=\?iso-8859-1\?[QB]\?[^?]+\?=) <`).FindAllSubmatch(raw, -1)
	if len(latin) == 0 {
		t.Fatal("corpus has no ISO-8859-1 sender names to check")
	}
	dec := new(mime.WordDecoder)
	persons, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{Kind: "person", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(persons.Entities) != 5 || persons.Entities[0].Count < 100 {
		t.Errorf("the most frequent people (the owner first) must have many references: %+v", persons.Entities)
	}
	for _, m := range latin {
		name, err := dec.DecodeHeader(string(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		res, err := memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{EntityIDs: []string{"person:" + strings.ToLower(name)}, K: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total == 0 {
			t.Errorf("ISO-8859-1 sender %q has no chunks under its person entity", name)
		}
	}
	// Slack: every mention resolved to a real name
	var users []struct {
		ID       string `json:"id"`
		RealName string `json:"real_name"`
	}
	ub, _ := os.ReadFile(filepath.Join(corpus, "chat", "slack", "users.json"))
	if err := json.Unmarshal(ub, &users); err != nil {
		t.Fatal(err)
	}
	res, err := memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{SourceKinds: []string{"chat"}, Query: "<@U", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) != 0 {
		t.Errorf("unresolved Slack mentions stored: %+v", res.Chunks)
	}
	mentioned := 0
	for _, u := range users {
		res, err := memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{EntityIDs: []string{"person:" + strings.ToLower(u.RealName)}, SourceKinds: []string{"chat"}, K: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total > 0 {
			mentioned++
		}
	}
	if mentioned < len(users)/2 {
		t.Errorf("only %d of %d Slack users are person entities", mentioned, len(users))
	}
	// idempotent re-ingest
	again, err := Run(ctx, st, []string{corpus}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(again.Line())
	if again.ChunksNew != 0 || again.ChunksRemoved != 0 || again.ChunksUnchanged != sum.ChunksNew {
		t.Errorf("re-ingest: %s after %s", again.Line(), sum.Line())
	}
}

// TestBadCorpus ingests the generator's bad/ folder: one error per malformed file,
// everything else ingested, no panic, no hang.
func TestBadCorpus(t *testing.T) {
	_, bad := genCorpus(t)
	st := openStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := Run(ctx, st, []string{bad}, Options{})
	if err != nil {
		t.Fatalf("Run: %v (a bounded run must finish)", err)
	}
	t.Log(sum.Line())
	perFile := map[string]int{}
	for _, e := range sum.Errors {
		rel, _ := filepath.Rel(bad, e.Path)
		perFile[filepath.ToSlash(rel)]++
		t.Log("error:", e.Error())
	}
	for _, f := range []string{"bad-base64.eml", "binary.md", "deeply-nested.json", "huge-line.txt", "not-json.json", "wrong-schema.json", "slack-missing-ts/general/2026-01-05.json"} {
		if perFile[f] != 1 {
			t.Errorf("%s: %d error lines, want exactly 1", f, perFile[f])
		}
	}
	for _, f := range []string{"empty.md", "unknown-charset.eml", "utf16-bom.md", "invalid-utf8.txt", "mixed-newlines.mbox"} {
		if perFile[f] != 0 {
			t.Errorf("%s must not fail (repaired or nothing to do): %d errors", f, perFile[f])
		}
	}
	// truncated.mbox / no-separator.mbox: when the generator wrote them as described
	// they must fail; its buffer reuse can leave them as copies of mixed-newlines.mbox
	for _, f := range []string{"truncated.mbox", "no-separator.mbox"} {
		b, _ := os.ReadFile(filepath.Join(bad, f))
		described := strings.Contains(string(b), "bad-trunc@") || !strings.HasPrefix(string(b), "From ")
		if described && perFile[f] != 1 {
			t.Errorf("%s: %d error lines, want 1", f, perFile[f])
		}
		if !described {
			t.Logf("%s holds a copy of another file's bytes (generator buffer reuse); checked only for no panic", f)
		}
	}
	if sum.Failures == 0 {
		t.Fatal("Run must report failures for the bad corpus")
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// README.txt, invalid-utf8.txt, utf16-bom.md; bad-base64, unknown-charset, mixed-newlines x3
	if stats.Sources["document"] != 3 || stats.Sources["email"] < 5 {
		t.Errorf("the good parts of bad/ must be ingested: %v", stats.Sources)
	}
	c := sourceChunks(t, st, "email:unknown-charset@postbox.example")
	if len(c) == 0 || !strings.Contains(c[0].Text, "på lørdag") {
		t.Errorf("unknown charset must fall back to Latin-1: %+v", c)
	}
}

// TestStoreFailureFailsOnlyItsSource makes the store refuse one document halfway
// through its write (a real SQLite trigger on its summary): Run reports that file,
// and the other sources of the same batch are stored.
func TestStoreFailureFailsOnlyItsSource(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"notes/a.md": "# Alpha\n\nThe alpha plan covers the garden shed.\n",
		"notes/b.md": "# Bravo\n\nThe POISON pill is in this note.\n",
		"notes/c.md": "# Charlie\n\nCharlie fixes the kitchen tap on Monday.\n",
	})
	path := filepath.Join(t.TempDir(), "memory_tree", "chunks.db")
	st, err := memtree.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON summaries WHEN NEW.text LIKE '%POISON%'
		BEGIN SELECT RAISE(ABORT, 'poisoned summary'); END`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), st, []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Sources != 2 || sum.Failures != 1 || len(sum.Errors) != 1 {
		t.Fatalf("summary %s, errors %v; want 2 sources stored and 1 failure", sum.Line(), sum.Errors)
	}
	if e := sum.Errors[0]; !strings.HasSuffix(filepath.ToSlash(e.Path), "notes/b.md") || !strings.Contains(e.Error(), "poisoned summary") {
		t.Errorf("error = %v, want notes/b.md with the store's reason", e)
	}
	stats, err := st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sources["document"] != 2 || stats.TotalChunks() != 2 || stats.Summaries != 2 {
		t.Errorf("store holds %+v, want the 2 good documents whole", stats)
	}
	res, err := memory.Default(st).Search(context.Background(), abi.SearchRequest{Query: "kitchen tap", K: 5})
	if err != nil || len(res.Chunks) != 1 {
		t.Errorf("search kitchen tap = %v, %v; want the Charlie note", res, err)
	}
}
