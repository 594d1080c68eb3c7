package memtree_test

import (
	"context"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// rewordedQueries are worded unlike the store's text (synonyms, words said only in
// passing), so Recall takes its expansion and association path, which the keyword
// queries of BenchmarkRecall skip.
var rewordedQueries = []string{
	"fender bender assessor", "holdup before the debut", "lodging neighborhood", "medication chemist",
	"stopover luggage", "novelist signing at the bookstore", "solicitor on the stipulation", "hosting outlay",
}

func BenchmarkRecallReworded(b *testing.B) {
	benchScales(b, func(b *testing.B, st *memtree.Store) {
		p50(b, func(i int) error {
			_, err := memory.Default(st).Recall(context.Background(), abi.RecallRequest{Query: rewordedQueries[i%len(rewordedQueries)], K: 10})
			return err
		})
	})
}
