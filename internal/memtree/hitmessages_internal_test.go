package memtree

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

func TestJSONStrLenBoundsEncoding(t *testing.T) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&</a>", "tab\tnew\nline\x01", "é中😀", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x80", `back\slash "q"`} {
		b, _ := json.Marshal(s)
		if got := jsonStrLen(s); got < len(b) {
			t.Errorf("jsonStrLen(%q) = %d < encoded %d", s, got, len(b))
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
	kept, omitted := fitHits(hits, &bound, resultBase)
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
