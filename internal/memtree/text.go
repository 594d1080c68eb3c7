package memtree

import "github.com/openhuman/openhuman-core/internal/retrieval"

// The store's names for the text analyzer (internal/retrieval's text.go): the
// index and the queries must split and stem words alike.

func fold(s string) string { return retrieval.Fold(s) }

func words(s string) []string { return retrieval.Words(s) }

func appendDistinctTerms(dst []string, s string) []string {
	return retrieval.AppendDistinctTerms(dst, s)
}

func stem(w string) string { return retrieval.Stem(w) }

var stopwords = retrieval.Stopwords

func quoteFTS(s string) string { return retrieval.QuoteFTS(s) }

// term is one query word with its stem and document frequency.
type term = retrieval.Term
