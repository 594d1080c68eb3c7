package activity

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// jsonHost answers chunks_list over a slice, speaking JSON like the real host.
type jsonHost struct {
	chunks []abi.ChunkHit
	fail   *abi.Error
	calls  int
}

func (h *jsonHost) ChunksList(req []byte) []byte {
	h.calls++
	if h.fail != nil {
		b, _ := json.Marshal(abi.HostReply{Error: h.fail})
		return b
	}
	var r abi.ChunksListRequest
	if err := json.Unmarshal(req, &r); err != nil {
		return []byte(`{"error":{"code":"invalid_params","message":"bad request"}}`)
	}
	out := abi.ListResult{Total: len(h.chunks), Chunks: []abi.ChunkHit{}}
	if r.Offset < len(h.chunks) {
		out.Chunks = h.chunks[r.Offset:min(r.Offset+r.K, len(h.chunks))]
	}
	ok, _ := json.Marshal(out)
	b, _ := json.Marshal(abi.HostReply{OK: ok})
	return b
}

func TestActivity(t *testing.T) {
	var chunks []abi.ChunkHit
	for i := range 120 {
		ts := time.Date(2026, time.Month(1+i%3), 5, 0, 0, 0, 0, time.UTC).UnixMilli()
		chunks = append(chunks, abi.ChunkHit{ID: fmt.Sprint(i), TimestampMS: ts})
	}
	h := &jsonHost{chunks: chunks}
	res, err := Run(json.RawMessage(`{"entity":"Person:Alice"}`), h)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res)
	want := `{"entity":"person:alice","total":120,"counted":120,"months":[{"month":"2026-01","count":40},{"month":"2026-02","count":40},{"month":"2026-03","count":40}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if h.calls != 3 {
		t.Errorf("%d host calls, want 3 pages", h.calls)
	}
}

func TestActivityErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{}`:                     "canonical entity id",
		`{"entity":"x"}`:         "canonical entity id",
		`{"entity":"a:b","k":3}`: "unexpected argument `k`",
		`[]`:                     "arguments must be",
	} {
		_, err := Run(json.RawMessage(in), &jsonHost{})
		if err == nil || err.Code != abi.CodeInvalidParams || !strings.Contains(err.Message, want) {
			t.Errorf("%s: %v, want invalid_params with %q", in, err, want)
		}
	}
	_, err := Run(json.RawMessage(`{"entity":"a:b"}`), &jsonHost{fail: &abi.Error{Code: abi.CodeUnavailable, Message: "store closed"}})
	if err == nil || err.Code != abi.CodeUnavailable {
		t.Errorf("host error not passed on: %v", err)
	}
}
