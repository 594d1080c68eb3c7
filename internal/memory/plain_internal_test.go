package memory

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

func TestFitChunkCutsLists(t *testing.T) {
	c := abi.Chunk{ID: strings.Repeat("a", 32), SourceKind: "email", SourceID: "email:x", SourceRef: "r0", Text: strings.Repeat("<", 2048)}
	for i := 0; i < 4000; i++ {
		c.SourceRefs = append(c.SourceRefs, strings.Repeat("r", 300))
		c.Entities = append(c.Entities, "url:"+strings.Repeat("&", 300))
	}
	for i := 0; i < 100; i++ {
		c.Attachments = append(c.Attachments, abi.Attachment{Name: strings.Repeat(">", 255)})
	}
	fitChunk(&c)
	b, _ := json.Marshal(abi.ChunkResult{Chunk: c})
	if len(b) > abi.MaxResultBytes || len(c.Text) != 2048 || c.Attachments != nil || len(c.Entities) != 0 || len(c.SourceRefs) == 0 || len(c.SourceRefs) == 4000 {
		t.Fatalf("%d bytes; %d attachments, %d entities, %d refs", len(b), len(c.Attachments), len(c.Entities), len(c.SourceRefs))
	}
	small := abi.Chunk{ID: "x", Text: "t", Entities: []string{"a"}, Attachments: []abi.Attachment{{Name: "n"}}}
	fitChunk(&small)
	if len(small.Entities) != 1 || len(small.Attachments) != 1 {
		t.Fatalf("a small chunk lost lists: %+v", small)
	}
}
