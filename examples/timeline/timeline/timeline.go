// Package timeline is the logic of the memory.timeline example tool: the chunks that
// mention one entity, in date order, with a count per month. It is plain Go (no
// build tags) so host tests call it directly; ../main.go links it to the ABI.
package timeline

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// PageSize is how many chunks one chunks_list host call asks for.
const PageSize = 50

// MaxScan bounds the chunks read for one timeline (MaxScan/PageSize host calls).
const MaxScan = 1000

// Lister is the one host function the tool needs (sdk/memory.Host implements it).
type Lister interface {
	ListChunks(abi.ChunksListRequest) (*abi.ListResult, error)
}

// Month is the number of chunks in one calendar month (UTC), "2026-03".
type Month struct {
	Month string `json:"month"`
	Count int    `json:"count"`
}

// Result is the tool's output.
type Result struct {
	Entity string `json:"entity"`
	// Total is how many chunks mention the entity in the window (the host's count).
	Total int `json:"total"`
	// Scanned is how many of them were read to build Months (at most MaxScan).
	Scanned int `json:"scanned"`
	// Truncated is true when Total > Scanned: narrow the window with since_ms/until_ms.
	Truncated bool           `json:"truncated"`
	Months    []Month        `json:"months"`
	Chunks    []abi.ChunkHit `json:"chunks"` // the earliest k scanned chunks, oldest first
	Hint      string         `json:"hint,omitempty"`
}

// Run parses the arguments ({entity, since_ms?, until_ms?, k?}) and builds the timeline.
func Run(raw json.RawMessage, host Lister) (*Result, error) {
	args, err := sdk.ParseArgs(raw, "entity", "since_ms", "until_ms", "k")
	if err != nil {
		return nil, err
	}
	entity, err := args.RequiredString("entity")
	if err != nil {
		return nil, err
	}
	entity = strings.ToLower(strings.TrimSpace(entity))
	if kind, value, ok := strings.Cut(entity, ":"); !ok || kind == "" || value == "" {
		return nil, sdk.InvalidParams("`entity` must be a canonical entity id like `email:alice@example.com` or `person:alice` (tree.top_entities lists them), got %q", entity)
	}
	since, err := args.Millis("since_ms")
	if err != nil {
		return nil, err
	}
	until, err := args.Millis("until_ms")
	if err != nil {
		return nil, err
	}
	if since != nil && until != nil && *since > *until {
		return nil, sdk.InvalidParams("`since_ms` (%d) is after `until_ms` (%d)", *since, *until)
	}
	k, err := args.K()
	if err != nil {
		return nil, err
	}

	res := &Result{Entity: entity, Months: []Month{}, Chunks: []abi.ChunkHit{}}
	var all []abi.ChunkHit
	for offset := 0; offset < MaxScan; offset += PageSize {
		page, err := host.ListChunks(abi.ChunksListRequest{
			EntityIDs: []string{entity}, SinceMS: since, UntilMS: until, K: PageSize, Offset: offset,
		})
		if err != nil {
			return nil, err
		}
		res.Total = page.Total
		if res.Hint == "" {
			res.Hint = page.Hint
		}
		all = append(all, page.Chunks...)
		if len(page.Chunks) < PageSize || len(all) >= page.Total {
			break
		}
	}
	res.Scanned = len(all)
	res.Truncated = res.Total > res.Scanned
	if res.Truncated {
		res.Hint = "more chunks mention this entity than one timeline reads; narrow the window with since_ms/until_ms"
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].TimestampMS != all[j].TimestampMS {
			return all[i].TimestampMS < all[j].TimestampMS
		}
		return all[i].ID < all[j].ID
	})
	counts := map[string]int{}
	for _, c := range all {
		counts[time.UnixMilli(c.TimestampMS).UTC().Format("2006-01")]++
	}
	for m, n := range counts {
		res.Months = append(res.Months, Month{Month: m, Count: n})
	}
	sort.Slice(res.Months, func(i, j int) bool { return res.Months[i].Month < res.Months[j].Month })
	if len(all) > k {
		all = all[:k]
	}
	res.Chunks = append(res.Chunks, all...)
	return res, nil
}
