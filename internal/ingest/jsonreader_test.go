package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

func TestJSONReaderDetect(t *testing.T) {
	bigText := strings.Repeat("x", 2*readkit.HeadBytes)
	cases := []struct {
		name, head string
		want, chat bool
	}{
		{"chat batch", `{"platform":"slack","channel_label":"#eng","messages":[]}`, true, true},
		{"chat batch, keys after a long first message", `{"messages":[{"author":"Ana","timestamp":1767600000000,"text":"` + bigText + `"}],"platform":"x","channel_label":"y"}`, true, true},
		{"chat batch, label after the messages", `{"messages":[{"author":"Ana","timestamp":1,"text":"a"},{"author":"Bo","timestamp":2,"text":"b"}],"channel_label":"y"}`, true, true},
		{"email thread", `{"provider":"gmail","thread_subject":"Lease","messages":[]}`, true, false},
		{"email thread without subject", `{"messages":[{"from":"a@x.example","sent_at":1,"body":"hi"}]}`, true, false},
		{"document", `{"title":"Notes","body":"text","modified_at":1767600000000}`, true, false},
		{"document, body only", "\ufeff" + `{"body":"text"}`, true, false},
		{"top-level array of batches", `[{"platform":"x","channel_label":"y","messages":[]}]`, true, false},
		{"nested too deep", strings.Repeat("[", 100), true, false},
		{"telegram chat", `{"name":"Ana","type":"personal_chat","id":123,"messages":[{"id":1,"type":"message","date":"2026-01-05T10:00:00","from":"Ana","text":"hi"}]}`, false, false},
		{"telegram export", `{"about":"Here is the data you requested","personal_information":{"user_id":1},"chats":{"about":"","list":[]}}`, false, false},
		{"discord export", `{"guild":{"id":"1","name":"G"},"channel":{"id":"2","name":"general"},"messages":[{"id":"3","timestamp":"2026-01-05T10:00:00+00:00","content":"hi","author":{"name":"ana"}}]}`, false, false},
		{"package.json", `{"name":"some-package","version":"1.0.0"}`, false, false},
		{"messages of unknown shape", `{"messages":[{"who":"x"}]}`, false, false},
		{"array of numbers", `[1,2,3]`, false, false},
		{"slack day file", `[{"type":"message","user":"U1","text":"hi","ts":"1767600100.000200"}]`, false, false},
		{"empty", ``, false, false},
		{"not JSON", `hello there`, false, false},
	}
	for _, c := range cases {
		head := []byte(c.head)
		if len(head) > readkit.HeadBytes {
			head = head[:readkit.HeadBytes]
		}
		if got := (jsonReader{}).Detect("x/in.json", false, head); got != c.want {
			t.Errorf("%s: jsonReader detect = %v, want %v", c.name, got, c.want)
		}
		if got := (chatBatchReader{}).Detect("x/in.json", false, head); got != c.chat {
			t.Errorf("%s: chatBatchReader detect = %v, want %v", c.name, got, c.chat)
		}
	}
	if (jsonReader{}).Detect("x/in.txt", false, []byte(`{"body":"text"}`)) || (jsonReader{}).Detect("x", true, nil) {
		t.Error("only .json files are JSON input")
	}
	if !(jsonReader{}).Detect("x/IN.JSON", false, []byte(`{"body":"text"}`)) {
		t.Error("the extension is case-insensitive")
	}
}

func TestChatBatchMonthsAndRefs(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"eng.json": `{"platform":"slack","channel_label":"#eng","messages":[
			{"author":"Ana","timestamp":"2026-02-02T09:00:00Z","text":"February"},
			{"author":"Ana","timestamp":1767600000000,"text":" first ","source_ref":"eng:1"},
			{"author":"Bo","timestamp":1767600060000,"text":"same second A"},
			{"author":"Cy","timestamp":1767600060000,"text":"same second B"}]}`,
	})
	out, rep := readertest.Run(t, jsonReader{}, filepath.Join(dir, "eng.json"))
	if rep.Sum.Failures != 0 {
		t.Fatal(rep.Sum.Errors)
	}
	if len(out.Sources) != 2 {
		t.Fatalf("sources = %+v, want January and February", out.Sources)
	}
	jan, feb := out.Sources[0], out.Sources[1]
	if jan.SourceID != "slack:#eng/2026-01" || jan.Title != "#eng (slack) (2026-01)" || !jan.Merge || jan.Kind != memtree.KindChat ||
		jan.Provider != "slack" || jan.Origin != filepath.Join(dir, "eng.json") {
		t.Errorf("January = %+v", jan)
	}
	if feb.SourceID != "slack:#eng/2026-02" || len(feb.Messages) != 1 || feb.Messages[0].Ref != "slack:eng:1770022800000" {
		t.Errorf("February = %+v", feb)
	}
	if len(jan.Messages) != 3 || jan.Messages[0].Ref != "eng:1" || jan.Messages[0].Text != "first" || jan.Messages[0].Author != "Ana" {
		t.Fatalf("January messages = %+v", jan.Messages)
	}
	a, b := jan.Messages[1].Ref, jan.Messages[2].Ref
	if a == b || !strings.HasPrefix(a, "slack:eng:1767600060000:") || !strings.HasPrefix(b, "slack:eng:1767600060000:") {
		t.Errorf("messages of one time without a source_ref get distinct refs: %q, %q", a, b)
	}
}

// TestChatBatchFilesOfOneDayBothStay ingests two batch files of one channel whose
// first messages fall on the same day (which once gave them one source id, so the
// second replaced the first) into a real store: both stay.
func TestChatBatchFilesOfOneDayBothStay(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"a.json": `{"platform":"whatsapp","channel_label":"Family","messages":[
			{"author":"Rosa","timestamp":"2026-01-05T08:00:00Z","text":"The zeppelin lands at noon","source_ref":"wa:1"}]}`,
		"b.json": `{"platform":"whatsapp","channel_label":"Family","messages":[
			{"author":"Ana","timestamp":"2026-01-05T20:00:00Z","text":"The submarine left the harbour","source_ref":"wa:2"},
			{"author":"Ana","timestamp":"2026-01-07T20:00:00Z","text":"Back home","source_ref":"wa:3"}]}`,
	})
	st := openStore(t)
	ctx := context.Background()
	for _, f := range []string{"a.json", "b.json", "a.json"} {
		out, rep := readertest.Run(t, jsonReader{}, filepath.Join(dir, f))
		if rep.Sum.Failures != 0 || len(out.Sources) != 1 {
			t.Fatalf("%s: %v, %+v", f, rep.Sum.Errors, out.Sources)
		}
		res, err := st.Ingest(ctx, out.Sources[0])
		if err != nil {
			t.Fatal(err)
		}
		if res.RemovedChunks != 0 {
			t.Errorf("%s removed %d chunks", f, res.RemovedChunks)
		}
	}
	for _, q := range []string{"zeppelin", "submarine", "back home"} {
		res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Chunks) != 1 {
			t.Errorf("search %q: %d hits, want 1", q, len(res.Chunks))
		}
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Sources["chat"] != 1 {
		t.Errorf("chat sources = %d, want 1 (whatsapp:Family/2026-01)", stats.Sources["chat"])
	}
}

func TestJSONReaderShapesAndFailures(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"thread.json": `{"provider":"gmail","thread_subject":"Re: Lease renewal","messages":[
			{"from":"Ana Souza <ana@mailbox.example>","to":["sam@kestrel.example"],"subject":"Lease renewal","sent_at":1767600000000,"body":"Renew?","source_ref":"<lease-1@x.example>"}]}`,
		"doc.json":      `{"provider":"notion","title":"Packing list","body":"Passport\nCharger","modified_at":1767600000000,"source_ref":"notion:abc"}`,
		"other.json":    `{"name":"some-package","version":"1.0.0"}`,
		"array.json":    `[{"platform":"x","channel_label":"y","messages":[]}]`,
		"deep.json":     strings.Repeat("[", 10000) + "1" + strings.Repeat("]", 10000),
		"nomsgs.json":   `{"platform":"x","channel_label":"y","messages":[]}`,
		"empty.json":    "",
		"bad-ts.json":   `{"platform":"x","channel_label":"y","messages":[{"author":"a","timestamp":"yesterday","text":"t"}]}`,
		"telegram.json": `{"name":"Ana","type":"personal_chat","id":123,"messages":[{"id":1,"type":"message","from":"Ana","text":"hi"}]}`,
	})
	read := func(r readkit.Reader, name string, forced bool) (*readertest.Output, *readkit.Report) {
		p := filepath.Join(dir, name)
		out, rep := &readertest.Output{}, readkit.NewReport(nil)
		r.Read(context.Background(), readkit.Input{Path: p, Root: dir, Rel: name, Forced: forced}, out, rep)
		return out, rep
	}
	out, rep := read(jsonReader{}, "thread.json", false)
	if rep.Sum.Failures != 0 || len(out.Sources) != 1 || out.Sources[0].SourceID != "email:lease-1@x.example" || out.Sources[0].Merge {
		t.Errorf("email thread = %+v, %v", out.Sources, rep.Sum.Errors)
	}
	out, rep = read(jsonReader{}, "doc.json", false)
	if rep.Sum.Failures != 0 || len(out.Sources) != 1 || out.Sources[0].SourceID != "doc:notion:abc" || out.Sources[0].Kind != memtree.KindDocument {
		t.Errorf("document = %+v, %v", out.Sources, rep.Sum.Errors)
	}
	// Unknown shapes: skipped when detected, failed when --kind forced the reader.
	for _, name := range []string{"other.json", "telegram.json"} {
		out, rep = read(jsonReader{}, name, false)
		if len(out.Sources) != 0 || rep.Sum.Failures != 0 || rep.Sum.SkippedBy[reasonNoJSONShape] != 1 {
			t.Errorf("%s not forced: sources %d, failures %v, skips %v", name, len(out.Sources), rep.Sum.Errors, rep.Sum.SkippedBy)
		}
		out, rep = read(jsonReader{}, name, true)
		if len(out.Sources) != 0 || rep.Sum.Failures != 1 || !strings.Contains(rep.Sum.Errors[0].Error(), "not a chat batch") {
			t.Errorf("%s forced: sources %d, failures %v", name, len(out.Sources), rep.Sum.Errors)
		}
	}
	// A chat batch forced on an email thread fails naming the field.
	out, rep = read(chatBatchReader{}, "thread.json", true)
	if len(out.Sources) != 0 || rep.Sum.Failures != 1 || !strings.Contains(rep.Sum.Errors[0].Error(), `field "platform"`) {
		t.Errorf("chat forced on an email thread: %+v, %v", out.Sources, rep.Sum.Errors)
	}
	for name, want := range map[string]string{
		"array.json":  "top-level JSON array",
		"deep.json":   "nested deeper than 64",
		"bad-ts.json": `message 1: field "timestamp"`,
	} {
		out, rep = read(jsonReader{}, name, false)
		if len(out.Sources) != 0 || rep.Sum.Failures != 1 || !strings.Contains(rep.Sum.Errors[0].Error(), want) {
			t.Errorf("%s: %+v, errors %v, want %q", name, out.Sources, rep.Sum.Errors, want)
		}
	}
	for _, name := range []string{"nomsgs.json", "empty.json"} {
		out, rep = read(jsonReader{}, name, false)
		if len(out.Sources) != 0 || rep.Sum.Failures != 0 || rep.Sum.Warnings != 1 {
			t.Errorf("%s: %+v, failures %v, %d warnings; want one warning", name, out.Sources, rep.Sum.Errors, rep.Sum.Warnings)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "thread.json")); err != nil {
		t.Fatal(err)
	}
}

// A run gathers chat files of one month into one write (coalesce); flushed after
// every file or once at the end, the store holds the same messages.
func TestChatCoalescingKeepsEveryMessage(t *testing.T) {
	files := map[string]string{}
	for i := 0; i < 6; i++ {
		files[fmt.Sprintf("part-%d.json", i)] = fmt.Sprintf(`{"platform":"slack","channel_label":"#ops","messages":[
			{"author":"Rosa","timestamp":"2026-01-%02dT08:00:00Z","text":"word%da alpha","source_ref":"ops:%da"},
			{"author":"Ana","timestamp":"2026-01-%02dT09:00:00Z","text":"word%db beta","source_ref":"ops:%db"}]}`, i+3, i, i, i+3, i, i)
	}
	dir := readertest.WriteFiles(t, files)
	count := func(st *memtree.Store) int {
		n := 0
		for i := 0; i < 6; i++ {
			for _, w := range []string{"a", "b"} {
				res, err := memory.Default(st).Search(context.Background(), abi.SearchRequest{Query: fmt.Sprintf("word%d%s", i, w), K: 5})
				if err != nil {
					t.Fatal(err)
				}
				n += len(res.Chunks)
			}
		}
		return n
	}
	once := openStore(t)
	sum, err := Run(context.Background(), once, []string{dir}, Options{})
	if err != nil || sum.Failures != 0 || sum.Sources != 1 {
		t.Fatalf("coalesced run: %v %v sources=%d", err, sum.Errors, sum.Sources)
	}
	old := coalesceBytes
	coalesceBytes = 1
	defer func() { coalesceBytes = old }()
	each := openStore(t)
	sum2, err := Run(context.Background(), each, []string{dir}, Options{})
	if err != nil || sum2.Failures != 0 || sum2.Sources != 6 || sum2.ChunksRemoved != 0 {
		t.Fatalf("per-file run: %v %v %s", err, sum2.Errors, sum2.Line())
	}
	if a, b := count(once), count(each); a != 12 || b != 12 {
		t.Errorf("messages found: coalesced %d, per file %d, want 12 each", a, b)
	}
}
