package memtree

import (
	"github.com/openhuman/openhuman-core/internal/analysis"
)

// The store's names for the text analyzer (internal/analysis): the
// index and the queries must split and stem words alike.

func fold(s string) string { return analysis.Fold(s) }

func words(s string) []string { return analysis.Words(s) }

func appendDistinctTerms(dst []string, s string) []string {
	return analysis.AppendDistinctTerms(dst, s)
}

func stem(w string) string { return analysis.Stem(w) }

var stopwords = analysis.Stopwords
