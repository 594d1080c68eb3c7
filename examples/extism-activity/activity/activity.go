// Package activity is the logic of the memory.activity Extism example: per-month
// counts of the chunks that mention one entity. It uses only encoding/json and the
// ABI wire types (no openhuman SDK), like a tool from an outside author would, and
// is plain Go so host tests call it directly.
package activity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// PageSize is the k of each chunks_list call; MaxPages bounds the calls.
const (
	PageSize = 50
	MaxPages = 10
)

// Host sends a JSON chunks_list request and returns the JSON reply (abi.HostReply).
type Host interface {
	ChunksList(req []byte) []byte
}

// Month is one month's count.
type Month struct {
	Month string `json:"month"`
	Count int    `json:"count"`
}

// Result is the tool's output.
type Result struct {
	Entity  string  `json:"entity"`
	Total   int     `json:"total"`
	Counted int     `json:"counted"`
	Months  []Month `json:"months"`
}

type args struct {
	Entity string `json:"entity"`
}

func invalid(format string, a ...any) *abi.Error {
	return &abi.Error{Code: abi.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// Run parses {"entity": "..."} strictly and counts the entity's chunks per month.
func Run(raw json.RawMessage, h Host) (*Result, *abi.Error) {
	var a args
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	// Strict decoding without json.Decoder: any io.Reader.Read call in a Go guest
	// makes the linker keep os.(*File).Read, which imports WASI fd_read — an import
	// the static gate refuses.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, invalid("arguments must be {\"entity\": \"kind:value\"}: %v", err)
	}
	for k := range keys {
		if k != "entity" {
			return nil, invalid("unexpected argument `%s`; the only argument is `entity`", k)
		}
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, invalid("arguments must be {\"entity\": \"kind:value\"}: %v", err)
	}
	a.Entity = strings.ToLower(strings.TrimSpace(a.Entity))
	if k, v, ok := strings.Cut(a.Entity, ":"); !ok || k == "" || v == "" {
		return nil, invalid("`entity` must be a canonical entity id like `email:alice@example.com`, got %q", a.Entity)
	}
	res := &Result{Entity: a.Entity, Months: []Month{}}
	counts := map[string]int{}
	for page := 0; page < MaxPages; page++ {
		req, _ := json.Marshal(abi.ChunksListRequest{EntityIDs: []string{a.Entity}, K: PageSize, Offset: page * PageSize})
		var reply abi.HostReply
		if err := json.Unmarshal(h.ChunksList(req), &reply); err != nil {
			return nil, &abi.Error{Code: abi.CodeInternal, Message: "chunks_list reply is not JSON: " + err.Error()}
		}
		if reply.Error != nil {
			return nil, reply.Error
		}
		var list abi.ListResult
		if err := json.Unmarshal(reply.OK, &list); err != nil {
			return nil, &abi.Error{Code: abi.CodeInternal, Message: "chunks_list result has the wrong shape: " + err.Error()}
		}
		res.Total = list.Total
		for _, c := range list.Chunks {
			counts[time.UnixMilli(c.TimestampMS).UTC().Format("2006-01")]++
			res.Counted++
		}
		if len(list.Chunks) < PageSize || res.Counted >= list.Total {
			break
		}
	}
	for m, n := range counts {
		res.Months = append(res.Months, Month{m, n})
	}
	sort.Slice(res.Months, func(i, j int) bool { return res.Months[i].Month < res.Months[j].Month })
	return res, nil
}
