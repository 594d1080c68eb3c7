//go:build wasip1

// Command threads-per-year counts the e-mail threads of the memory tree per
// year of their most recent message (the Go version of the four-language example).
package main

import (
	"slices"
	"time"

	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/abi"
	"github.com/openhuman/openhuman-core/sdk/memory"
)

type year struct {
	Year    int `json:"year"`
	Threads int `json:"threads"`
}

func init() {
	sdk.Handle(func(r *sdk.Request) (any, error) {
		if _, err := r.Args(); err != nil {
			return nil, err
		}
		counts := map[int]int{}
		total := 0
		for offset := 0; ; {
			page, err := memory.ListSources(abi.SourcesListRequest{Kinds: []string{"email"}, K: 50, Offset: offset})
			if err != nil {
				return nil, err
			}
			for _, s := range page.Sources {
				counts[time.UnixMilli(s.MostRecentMS).UTC().Year()]++
				total++
			}
			if page.Next == 0 {
				break
			}
			offset = page.Next
		}
		years := []year{}
		for y, n := range counts {
			years = append(years, year{y, n})
		}
		slices.SortFunc(years, func(a, b year) int { return a.Year - b.Year })
		return map[string]any{"years": years, "threads": total}, nil
	})
}

func main() {}
