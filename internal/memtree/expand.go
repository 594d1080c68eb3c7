package memtree

import (
	"context"

	"github.com/openhuman/openhuman-core/internal/lexicon"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
)

var _ index.ChunkVectors = storeReader{}

// Related is a term related to a query word, with a weight in (0, 1]: synonyms about
// 1, near hypernyms lower. It mirrors lexicon.Related.
type Related = index.Related

// Expander expands one query word into related terms (offline lexical-semantic
// recall). internal/lexicon provides the WordNet one.
type Expander interface {
	Expand(word string) []Related
}

// ExpanderFunc adapts a function (such as lexicon.Expand) to Expander.
type ExpanderFunc func(word string) []Related

// Expand calls f.
func (f ExpanderFunc) Expand(word string) []Related { return f(word) }

// Embedder turns texts into dense vectors. internal/embed's Embedder satisfies it.
type Embedder interface {
	Model() string
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

type expanderBox struct{ e Expander }

type embedderBox struct{ e Embedder }

// SetExpander sets the query expander recall uses in its offline mode; stores start
// with the WordNet expander of internal/lexicon (nil: no expansion).
// Safe to call concurrently with reads.
func (s *Store) SetExpander(e Expander) {
	if e == nil {
		s.expander.Store(nil)
		return
	}
	s.expander.Store(&expanderBox{e})
}

// SetEmbedder sets the dense embedder recall uses (nil: offline mode only). Safe to
// call concurrently with reads.
func (s *Store) SetEmbedder(e Embedder) {
	if e == nil {
		s.embedder.Store(nil)
		return
	}
	s.embedder.Store(&embedderBox{e: e})
}

func (s *Store) currentExpander() Expander {
	if b := s.expander.Load(); b != nil {
		return b.e
	}
	return nil
}

func (s *Store) currentEmbedder() Embedder {
	if b := s.embedder.Load(); b != nil {
		return b.e
	}
	return nil
}

// lexiconExpander is the default Expander: WordNet synonyms, hypernyms, hyponyms and co-hyponyms from
// internal/lexicon.
var lexiconExpander = ExpanderFunc(func(word string) []Related {
	rs := lexicon.Expand(word)
	out := make([]Related, 0, len(rs))
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.Term] = true
		out = append(out, Related{Term: r.Term, Weight: r.Weight})
	}
	// More specific terms ("excursion" → "field trip"), co-hyponyms and hypernyms two
	// levels up ("fender-bender" → "accident"): recall keeps only the terms the store
	// uses, so the long lists of general words cost little.
	for _, r := range lexicon.Narrower(word) {
		if !seen[r.Term] {
			seen[r.Term] = true
			out = append(out, Related{Term: r.Term, Weight: r.Weight})
		}
	}
	for _, r := range lexicon.Siblings(word) {
		if !seen[r.Term] {
			seen[r.Term] = true
			out = append(out, Related{Term: r.Term, Weight: r.Weight})
		}
	}
	return out
})
