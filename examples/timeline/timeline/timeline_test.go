package timeline

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// sliceLister answers chunks_list the way the memory tree does: entity filter,
// time window, newest first, k and offset, total from a count.
type sliceLister struct {
	chunks map[string][]abi.ChunkHit // entity -> chunks
	calls  int
}

func (s *sliceLister) ListChunks(r abi.ChunksListRequest) (*abi.ListResult, error) {
	s.calls++
	if len(r.EntityIDs) != 1 {
		return nil, fmt.Errorf("want one entity filter, got %v", r.EntityIDs)
	}
	var in []abi.ChunkHit
	for _, c := range s.chunks[r.EntityIDs[0]] {
		if r.SinceMS != nil && c.TimestampMS < *r.SinceMS || r.UntilMS != nil && c.TimestampMS > *r.UntilMS {
			continue
		}
		in = append(in, c)
	}
	sort.Slice(in, func(i, j int) bool { return in[i].TimestampMS > in[j].TimestampMS })
	out := &abi.ListResult{Total: len(in), Chunks: []abi.ChunkHit{}}
	if r.Offset < len(in) {
		end := min(r.Offset+r.K, len(in))
		out.Chunks = in[r.Offset:end]
	}
	return out, nil
}

func ms(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 12, 0, 0, 0, time.UTC).UnixMilli()
}

func TestTimeline(t *testing.T) {
	l := &sliceLister{chunks: map[string][]abi.ChunkHit{
		"email:alice@example.com": {
			{ID: "c3", TimestampMS: ms(2026, 3, 2)},
			{ID: "c1", TimestampMS: ms(2026, 1, 31)},
			{ID: "c2", TimestampMS: ms(2026, 3, 1)},
			{ID: "c4", TimestampMS: ms(2026, 3, 30)},
			{ID: "c0", TimestampMS: ms(2025, 12, 1)},
		},
	}}
	res, err := Run(json.RawMessage(`{"entity":"Email:Alice@Example.com","k":3}`), l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Entity != "email:alice@example.com" || res.Total != 5 || res.Scanned != 5 || res.Truncated {
		t.Errorf("header: %+v", res)
	}
	months, _ := json.Marshal(res.Months)
	if string(months) != `[{"month":"2025-12","count":1},{"month":"2026-01","count":1},{"month":"2026-03","count":3}]` {
		t.Errorf("months = %s", months)
	}
	var ids []string
	for _, c := range res.Chunks {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, ",") != "c0,c1,c2" {
		t.Errorf("chunks = %v, want the 3 oldest in date order", ids)
	}

	since := ms(2026, 2, 1)
	res, err = Run(json.RawMessage(fmt.Sprintf(`{"entity":"email:alice@example.com","since_ms":%d}`, since)), l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 3 || len(res.Months) != 1 || res.Months[0] != (Month{"2026-03", 3}) {
		t.Errorf("since window: %+v", res)
	}

	res, err = Run(json.RawMessage(`{"entity":"person:nobody"}`), l)
	if err != nil || res.Total != 0 || len(res.Months) != 0 || len(res.Chunks) != 0 {
		t.Errorf("unknown entity: %+v %v", res, err)
	}
	if b, _ := json.Marshal(res); !strings.Contains(string(b), `"months":[]`) || !strings.Contains(string(b), `"chunks":[]`) {
		t.Errorf("empty result must encode arrays, not null: %s", b)
	}
}

func TestTimelinePagesAndTruncates(t *testing.T) {
	var many []abi.ChunkHit
	for i := range MaxScan + 130 {
		many = append(many, abi.ChunkHit{ID: fmt.Sprintf("c%04d", i), TimestampMS: ms(2024, 1, 1) + int64(i)*86_400_000})
	}
	l := &sliceLister{chunks: map[string][]abi.ChunkHit{"topic:budget": many}}
	res, err := Run(json.RawMessage(`{"entity":"topic:budget","k":50}`), l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Scanned != MaxScan || res.Total != len(many) || !res.Truncated || !strings.Contains(res.Hint, "since_ms") {
		t.Errorf("truncation: scanned %d total %d truncated %v hint %q", res.Scanned, res.Total, res.Truncated, res.Hint)
	}
	if l.calls != MaxScan/PageSize {
		t.Errorf("%d host calls, want %d", l.calls, MaxScan/PageSize)
	}
	sum := 0
	for _, m := range res.Months {
		sum += m.Count
	}
	if sum != MaxScan || len(res.Chunks) != 50 {
		t.Errorf("month counts sum %d, chunks %d", sum, len(res.Chunks))
	}
	for i := 1; i < len(res.Chunks); i++ {
		if res.Chunks[i].TimestampMS < res.Chunks[i-1].TimestampMS {
			t.Fatalf("chunks not in date order at %d", i)
		}
	}
}

func TestTimelineBadArguments(t *testing.T) {
	l := &sliceLister{}
	cases := map[string]string{
		`{}`:                                             "entity",
		`{"entity":"alice"}`:                             "canonical entity id",
		`{"entity":"email:"}`:                            "canonical entity id",
		`{"entity":"topic:x","k":0}`:                     "k",
		`{"entity":"topic:x","k":51}`:                    "k",
		`{"entity":"topic:x","colour":"red"}`:            "unexpected argument `colour`",
		`{"entity":"topic:x","since_ms":5,"until_ms":4}`: "after",
		`[1,2]`: "object",
	}
	for in, want := range cases {
		_, err := Run(json.RawMessage(in), l)
		if err == nil {
			t.Errorf("%s: accepted", in)
			continue
		}
		e, ok := err.(*abi.Error)
		if !ok || e.Code != abi.CodeInvalidParams || !strings.Contains(e.Message, want) {
			t.Errorf("%s: %v, want invalid_params mentioning %q", in, err, want)
		}
	}
	if l.calls != 0 {
		t.Errorf("bad arguments reached the host %d times", l.calls)
	}
}
