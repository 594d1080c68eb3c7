package memtree

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

func TestJSONStrLenBoundsEncoding(t *testing.T) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&</a>", "tab\tnew\nline\x01", "é中😀", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x80", `back\slash "q"`} {
		b, _ := json.Marshal(s)
		if got := fit.StrLen(s); got < len(b) {
			t.Errorf("fit.StrLen(%q) = %d < encoded %d", s, got, len(b))
		}
	}
}

func TestFitHitsKeepsResultsUnderTheCap(t *testing.T) {
	// Fifty hits with 10 KiB titles of characters JSON escapes and ten messages each.
	title := strings.Repeat("<", 10<<10)
	var hits []abi.ChunkHit
	for i := 0; i < 50; i++ {
		h := abi.ChunkHit{ID: strings.Repeat("a", 32), SourceKind: "email", SourceID: "email:x", Title: title, Snippet: "s"}
		for j := 0; j < 10; j++ {
			h.Messages = append(h.Messages, abi.HitMessage{Ref: "r", Text: strings.Repeat("&", 800)})
		}
		hits = append(hits, h)
	}
	bound := 800
	kept, omitted := fit.Hits(hits, &bound, fit.ResultBase)
	res := abi.SearchResult{Chunks: kept, MessageTextMaxChars: bound, Omitted: omitted}
	b, _ := json.Marshal(res)
	if len(b) > abi.MaxResultBytes || omitted == 0 || len(kept)+omitted != 50 || bound != abi.HitMessageMinChars {
		t.Fatalf("%d bytes, %d kept, %d omitted, bound %d", len(b), len(kept), omitted, bound)
	}
	for _, h := range kept {
		for _, m := range h.Messages {
			if len([]rune(m.Text)) > bound || !m.Truncated {
				t.Fatalf("message of %d characters, bound %d", len([]rune(m.Text)), bound)
			}
		}
	}
}

// TestHitMessagesFromNeighbourChunks: a hit may cite a message of the next chunk of
// its source (an answer split from its question); its message comes from there. A
// ref found nowhere keeps its place with no text.
func TestHitMessagesFromNeighbourChunks(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "chunks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	const hour = 3600_000
	src := SourceInput{Kind: KindChat, SourceID: "chat:pair", Title: "pair", Provider: "test", Messages: []MessageInput{
		{Ref: "q", Author: "Caroline", TimestampMS: 1_700_000_000_000, Text: "How long have you been married?"},
		{Ref: "a", Author: "Melanie", TimestampMS: 1_700_000_000_000 + 3*hour, Text: "5 years already!"},
	}}
	if _, err := st.Ingest(ctx, src); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := st.r.QueryRow(`SELECT count(*) FROM chunks`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d chunks, %v; the test needs the question and the answer in two", n, err)
	}
	res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: "married", K: 5})
	if err != nil || len(res.Chunks) == 0 {
		t.Fatalf("search: %v, %+v", err, res)
	}
	hits := []abi.ChunkHit{res.Chunks[0]}
	hits[0].SourceRef, hits[0].SourceRefs = "q", []string{"q", "a", "nowhere"}
	if _, err := memory.HitMessages(ctx, st.reader(st.r, nil), hits); err != nil {
		t.Fatal(err)
	}
	got := hits[0].Messages
	if len(got) != 3 || got[0].Ref != "q" || got[1].Ref != "a" || got[2].Ref != "nowhere" {
		t.Fatalf("messages %+v", got)
	}
	if got[1].Author != "Melanie" || got[1].Text != "5 years already!" || got[1].TimePrecision != abi.PrecisionMS {
		t.Errorf("neighbour's message: %+v", got[1])
	}
	if got[2].Text != "" || got[2].Author != "" || got[2].Time != "" {
		t.Errorf("unknown ref: %+v", got[2])
	}
}

// BenchmarkHitMessages measures the cited-message step beside the whole search it
// ends, on 3,000 chat channels of 8 messages (24,000 messages), k = 10 and 50.
//
//	go test ./internal/memtree -run '^$' -bench HitMessages -benchtime 200x
func BenchmarkHitMessages(b *testing.B) {
	st, err := Open(filepath.Join(b.TempDir(), "chunks.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	w, err := st.NewBatchWriter(ctx)
	if err != nil {
		b.Fatal(err)
	}
	vocab := strings.Fields("river lantern copper meadow harbor violet orchard summit falcon ember quartz willow tundra saffron glacier cobalt marble thistle canyon juniper")
	seed := uint32(1)
	word := func() string { seed = seed*1664525 + 1013904223; return vocab[seed>>16%uint32(len(vocab))] }
	for i := 0; i < 3000; i++ {
		src := SourceInput{Kind: KindChat, SourceID: "chat:c" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i), Title: "c", Provider: "test"}
		for j := 0; j < 8; j++ {
			var ws []string
			for k := 0; k < 12; k++ {
				ws = append(ws, word())
			}
			src.Messages = append(src.Messages, MessageInput{Ref: src.SourceID + "/" + itoa(j), Author: "ann",
				TimestampMS: 1_700_000_000_000 + int64(i)*86_400_000 + int64(j)*60_000, Text: strings.Join(ws, " ")})
		}
		p, err := Prepare(src)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Write(p); err != nil {
			b.Fatal(err)
		}
		if w.Due() {
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	for _, k := range []int{10, 50} {
		req := abi.SearchRequest{Query: "copper lantern harbor", K: k}
		res, err := memory.Default(st).Search(ctx, req)
		if err != nil || len(res.Chunks) < k {
			b.Fatalf("search: %v, %d hits", err, len(res.Chunks))
		}
		b.Run("search-k"+itoa(k), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := memory.Default(st).Search(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("messages-k"+itoa(k), func(b *testing.B) {
			hits := append([]abi.ChunkHit(nil), res.Chunks...)
			for i := 0; i < b.N; i++ {
				if _, err := memory.HitMessages(ctx, st.reader(st.r, nil), hits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestNextOffset(t *testing.T) {
	for _, c := range []struct{ offset, n, had, total, want int }{
		{0, 50, 50, 120, 50}, {100, 20, 20, 120, 0}, {0, 10, 50, 120, 10}, {30, 0, 50, 120, 31}, {119, 0, 1, 120, 0}, {200, 0, 0, 120, 0},
	} {
		if got := fit.NextOffset(c.offset, c.n, c.had, c.total); got != c.want {
			t.Errorf("fit.NextOffset(%d, %d, %d, %d) = %d, want %d", c.offset, c.n, c.had, c.total, got, c.want)
		}
	}
}
