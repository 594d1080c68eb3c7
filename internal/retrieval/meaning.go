package retrieval

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/internal/wordvec"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// The meaning list (issue 36): when a question names a person the store knows
// ("What pets does Caroline have?"), that person's messages ranked by the cosine
// of their meaning vector (internal/wordvec: the SIF mean of GloVe word vectors)
// to the question's, fused into search's and recall's hits by weighted reciprocal
// rank below their literal lead (MeaningSearch; MeaningRecall × (1 − ρ)). It
// finds the message whose words differ from the question's ("turtles" for
// "pets") among the few hundred or thousand a person wrote. Both weights are 0
// (off): on LoCoMo's held-out folds no weight beat search's own order, and a
// store-wide list lowered the corpus's paraphrase and related recall
// (RATIONALE.md, "Meaning"). With the weights at 0 nothing here runs.
//
// The vectors are computed once per store generation and person (messageVectors),
// from the chunks the backend links to the person (index.Backend's Recent and
// Texts): no backend keeps them, and a backend need implement nothing for them.
//
// With the optional embedder (a backend implementing index.ChunkVectors, with an
// embedder configured and the query allowed to leave the process) recall's list is
// the embedder's instead (embedderMeaningList): the person's chunks ranked by the
// cosine of their stored vector to the query's, each citing the person's
// messages in it, in place of recall's order below the hits that say a query
// word (meaningFirst): the chunks found only through the person come newest first
// from search, an order that says nothing of the question, and the embedder's
// order replaces it. Search never sends a query to the embedder.

// Cost bounds of the meaning list (not quality knobs).
const (
	// meaningScope is the most chunks of one person the list reads (the newest):
	// a person of 5,000 chunks costs about 0.3 s to vectorise once per generation.
	meaningScope = 5000
	// meaningDepth is how many of the person's messages the list ranks.
	meaningDepth = 50
	// meaningCacheMax is how many (generation, person) vector sets are kept.
	meaningCacheMax = 64
)

// personMessage is one message of a person's chunks with its meaning code.
type personMessage struct {
	hit  abi.ChunkHit // the chunk, citing this message alone (or the person's messages in it)
	code wordvec.Code
}

type meaningKey struct {
	store any
	gen   string
	who   string
	list  personList
}

// personList names what a cached list of a person holds.
type personList int

const (
	listMessages personList = iota // messages with meaning codes (messageVectors)
	listChunks                     // chunks citing the person's messages (personChunks)
)

var meaningCache = struct {
	mu    sync.Mutex
	m     map[meaningKey][]personMessage
	order []meaningKey
}{m: map[meaningKey][]personMessage{}}

// namedPeople returns the person entity ids of the people query names (known to
// the store: a capitalised or quoted word or name the backend knows as a person)
// and the folded words naming them.
func (c *Call) namedPeople() (ids []string, nameWords map[string]bool) {
	nameWords = map[string]bool{}
	for _, n := range c.Query.Names {
		for _, w := range strings.Fields(n) {
			nameWords[w] = true
		}
	}
	ids = append(ids, c.Entities...)
	for w := range NamedWords(c.Query.Raw) {
		if nameWords[w] || analysis.Stopwords[w] {
			continue
		}
		if p, ok := c.St.People(w); ok && len(p) > 0 {
			ids = append(ids, p...)
			nameWords[w] = true
		}
	}
	var people []string
	for _, id := range ids {
		if strings.HasPrefix(id, "person:") && !slices.Contains(people, id) {
			people = append(people, id)
		}
	}
	sort.Strings(people)
	return people, nameWords
}

// messageVectors returns the meaning codes of the messages of the people ids
// whose author is one of them (a chat message whose author's name says a word of
// nameWords), or of every message of their chunks that names no author (mail,
// notes), computed once per generation.
func messageVectors(ctx context.Context, st index.Backend, ids []string, nameWords map[string]bool) ([]personMessage, error) {
	return cachedPeople(st, ids, listMessages, func() ([]personMessage, error) {
		msgs := []personMessage{}
		err := eachPersonMessage(ctx, st, ids, nameWords, func(h index.Hit, ref, text string) {
			v, ok := wordvec.Text(text)
			if !ok {
				return
			}
			mh := h.ChunkHit
			mh.SourceRef, mh.SourceRefs, mh.Score, mh.Snippet = ref, []string{ref}, 0, text
			msgs = append(msgs, personMessage{hit: mh, code: v.Encode()})
		})
		return msgs, err
	})
}

// personChunks returns the chunks holding messages of the people ids (as
// messageVectors chooses them), each hit citing those messages only, its snippet
// their first; computed once per generation.
func personChunks(ctx context.Context, st index.Backend, ids []string, nameWords map[string]bool) ([]personMessage, error) {
	return cachedPeople(st, ids, listChunks, func() ([]personMessage, error) {
		chunks := []personMessage{}
		err := eachPersonMessage(ctx, st, ids, nameWords, func(h index.Hit, ref, text string) {
			if n := len(chunks); n > 0 && chunks[n-1].hit.ID == h.ID {
				chunks[n-1].hit.SourceRefs = append(chunks[n-1].hit.SourceRefs, ref)
				return
			}
			ch := h.ChunkHit
			ch.SourceRef, ch.SourceRefs, ch.Score, ch.Snippet = ref, []string{ref}, 0, text
			chunks = append(chunks, personMessage{hit: ch})
		})
		return chunks, err
	})
}

// cachedPeople returns the cached list of (generation, ids, list), computing
// it with build when absent.
func cachedPeople(st index.Backend, ids []string, list personList, build func() ([]personMessage, error)) ([]personMessage, error) {
	gen := st.Stats().Generation
	key := meaningKey{store: gen.Store, gen: gen.ID, who: strings.Join(ids, "\x00"), list: list}
	meaningCache.mu.Lock()
	msgs, ok := meaningCache.m[key]
	meaningCache.mu.Unlock()
	if ok {
		return msgs, nil
	}
	msgs, err := build()
	if err != nil {
		return nil, err
	}
	meaningCache.mu.Lock()
	if _, ok := meaningCache.m[key]; !ok {
		meaningCache.m[key] = msgs
		meaningCache.order = append(meaningCache.order, key)
		if len(meaningCache.order) > meaningCacheMax {
			delete(meaningCache.m, meaningCache.order[0])
			meaningCache.order = meaningCache.order[1:]
		}
	}
	meaningCache.mu.Unlock()
	return msgs, nil
}

// eachPersonMessage calls fn, chunk by chunk (newest first, at most meaningScope
// chunks) and in message order, with each message of the people ids' chunks
// whose author is one of them (a chat message whose author's name says a word of
// nameWords) or that names no author (mail, notes).
func eachPersonMessage(ctx context.Context, st index.Backend, ids []string, nameWords map[string]bool, fn func(h index.Hit, ref, text string)) error {
	hits, err := st.Recent(ctx, index.Filter{EntityIDs: ids}, meaningScope, nil)
	if err != nil {
		return err
	}
	chunkIDs := make([]string, len(hits))
	for i, h := range hits {
		chunkIDs[i] = h.ID
	}
	texts, err := st.Texts(ctx, chunkIDs)
	if err != nil {
		return err
	}
	for _, h := range hits {
		ct, ok := texts[h.ID]
		if !ok {
			continue
		}
		refs := h.SourceRefs
		if len(refs) == 0 && h.SourceRef != "" {
			refs = []string{h.SourceRef}
		}
		if len(ct.Spans) != len(refs) {
			continue
		}
		for m, ref := range refs {
			seg, ok := ct.Message(m)
			if !ok {
				continue
			}
			author, text := ChatAuthor(seg)
			if author != "" && !saysAny(author, nameWords) {
				continue
			}
			fn(h, ref, text)
		}
	}
	return nil
}

// saysAny reports whether name's folded words include one of words.
func saysAny(name string, words map[string]bool) bool {
	for _, w := range analysis.Words(name) {
		if words[w] {
			return true
		}
	}
	return false
}

// meaningList ranks the messages of the people the query names by the cosine of
// their meaning vector to the query's (the query's words but the names), best
// first, at most meaningDepth; nil when the query names nobody the store knows or
// has no word the table knows.
func (c *Call) meaningList(ctx context.Context) ([]abi.ChunkHit, error) {
	ids, nameWords := c.namedPeople()
	if len(ids) == 0 {
		return nil, nil
	}
	var words []string
	for _, w := range analysis.Words(c.Query.Text) {
		if !nameWords[w] {
			words = append(words, w)
		}
	}
	qv, ok := wordvec.OfWords(words)
	if !ok {
		return nil, nil
	}
	msgs, err := messageVectors(ctx, c.St, ids, nameWords)
	if err != nil || len(msgs) == 0 {
		return nil, err
	}
	type scored struct {
		i   int
		cos float32
	}
	s := make([]scored, len(msgs))
	for i := range msgs {
		s[i] = scored{i, qv.Cosine(msgs[i].code)}
	}
	sort.SliceStable(s, func(a, b int) bool { return s[a].cos > s[b].cos })
	out := make([]abi.ChunkHit, 0, min(len(s), meaningDepth))
	for _, x := range s[:min(len(s), meaningDepth)] {
		h := msgs[x.i].hit
		h.Score = float64(x.cos)
		out = append(out, h)
	}
	return out, nil
}

// embedderMeaningList ranks the chunks of the people the query names by the
// cosine of their stored vector (cv's embedder) to the query's, best first, at
// most meaningDepth, each citing the person's messages in it; nil when the query
// names nobody the store knows, or the embedder gives no query vector (refused
// by the embed gate, or failing: recall's vector list has said so in its note).
func (c *Call) embedderMeaningList(ctx context.Context, cv index.ChunkVectors) ([]abi.ChunkHit, error) {
	ids, nameWords := c.namedPeople()
	if len(ids) == 0 {
		return nil, nil
	}
	q, err := cv.QueryVector(ctx, c.Query.Raw)
	if err != nil || len(q) == 0 {
		if err != nil && !errors.Is(err, index.ErrEmbedRefused) {
			slog.Warn("recall: embedder failed for the meaning list", "err", err)
		}
		return nil, nil
	}
	chunks, err := personChunks(ctx, c.St, ids, nameWords)
	if err != nil || len(chunks) == 0 {
		return nil, err
	}
	chunkIDs := make([]string, len(chunks))
	for i, ch := range chunks {
		chunkIDs[i] = ch.hit.ID
	}
	sims, err := cv.Similarities(ctx, q, chunkIDs)
	if err != nil {
		return nil, err
	}
	type scored struct {
		i   int
		cos float32
	}
	s := make([]scored, 0, len(sims))
	for i, ch := range chunks {
		if cos, ok := sims[ch.hit.ID]; ok {
			s = append(s, scored{i, cos})
		}
	}
	sort.SliceStable(s, func(a, b int) bool { return s[a].cos > s[b].cos })
	out := make([]abi.ChunkHit, 0, min(len(s), meaningDepth))
	for _, x := range s[:min(len(s), meaningDepth)] {
		h := chunks[x.i].hit
		h.SourceRefs = slices.Clone(h.SourceRefs)
		h.Score = float64(x.cos)
		out = append(out, h)
	}
	return out, nil
}

// wordLead is the number of leading hits up to the last that says one of the
// query's words other than the names of the people it names (a search level below
// RecentLevel, when the query has such a word the store says): the hits after it
// were found only through the person or date the query names, or not by search.
func (c *Call) wordLead(hits []abi.ChunkHit) int {
	_, nameWords := c.namedPeople()
	said := false
	for _, t := range c.Terms {
		said = said || !nameWords[t.Word]
	}
	if !said {
		return 0
	}
	end := 0
	for i, h := range hits {
		if l, ok := c.level[h.ID]; ok && l < RecentLevel {
			end = i + 1
		}
	}
	return end
}

// meaningFirst puts the meaning list ml in place of hits' order after their
// first keep: those hits stay, then each meaning hit in its order (as the hit on
// the same chunk, when there is one, with that hit's citations: the embedder's
// vector is the chunk's), then the other hits in their order; at most k. It is
// fuseMeaning with an unbounded weight, for the hits found only through the
// person a question names, whose order (newest first) says nothing of the
// question.
func meaningFirst(hits, ml []abi.ChunkHit, keep, k int) []abi.ChunkHit {
	if len(ml) == 0 || keep >= k {
		return hits
	}
	keep = min(keep, len(hits))
	first := map[string]int{} // chunk id → its first hit
	for i, h := range hits {
		if _, ok := first[h.ID]; !ok {
			first[h.ID] = i
		}
	}
	out := make([]abi.ChunkHit, 0, k)
	used := make([]bool, len(hits))
	for i := range keep {
		used[i] = true
		out = append(out, hits[i])
	}
	placed := map[string]bool{}
	for _, h := range ml {
		if len(out) == k {
			return out
		}
		if placed[h.ID] {
			continue
		}
		placed[h.ID] = true
		i, ok := first[h.ID]
		switch {
		case ok && used[i]:
		case ok:
			used[i] = true
			out = append(out, hits[i])
		default:
			h.Score = 0
			out = append(out, h)
		}
	}
	for i, h := range hits {
		if len(out) == k {
			break
		}
		if !used[i] {
			out = append(out, h)
		}
	}
	return out
}

// fuseMeaning fuses the meaning list ml into hits (best first) with weight w: the
// first keep hits stay in place; every other hit scores 1/(RRFK + rank), plus
// w/(RRFK + r) for each meaning hit at rank r citing a message it cites (any of
// the meaning hit's messages); a meaning hit citing no message a hit cites joins
// with w/(RRFK + r). Best first, at most
// k. With w == 0 or no meaning list, hits come back unchanged.
func fuseMeaning(p *Params, hits, ml []abi.ChunkHit, w float64, keep, k int) []abi.ChunkHit {
	if w <= 0 || len(ml) == 0 || keep >= k {
		return hits
	}
	keep = min(keep, len(hits))
	type acc struct {
		hit   abi.ChunkHit
		score float64
		rank  int
	}
	refKey := func(id, ref string) string { return id + "\x00" + ref }
	cited := map[string]int{} // chunk id + message ref → the first hit citing it, in accs
	accs := make([]*acc, 0, len(hits)+len(ml))
	for i, h := range hits {
		accs = append(accs, &acc{hit: h, score: 1 / (p.RRFK + float64(i+1)), rank: i})
		refs := h.SourceRefs
		if len(refs) == 0 && h.SourceRef != "" {
			refs = []string{h.SourceRef}
		}
		for _, r := range refs {
			if _, ok := cited[refKey(h.ID, r)]; !ok {
				cited[refKey(h.ID, r)] = i
			}
		}
	}
	for r, h := range ml {
		add := w / (p.RRFK + float64(r+1))
		refs := h.SourceRefs
		if len(refs) == 0 {
			refs = []string{h.SourceRef}
		}
		found := false
		for _, ref := range refs {
			if i, ok := cited[refKey(h.ID, ref)]; ok {
				accs[i].score += add
				found = true
				break
			}
		}
		if found {
			continue
		}
		a := &acc{hit: h, score: add, rank: len(hits) + r}
		a.hit.Score = 0
		accs = append(accs, a)
		for _, ref := range refs {
			cited[refKey(h.ID, ref)] = len(accs) - 1
		}
	}
	rest := accs[keep:]
	sort.SliceStable(rest, func(i, j int) bool {
		if rest[i].score != rest[j].score {
			return rest[i].score > rest[j].score
		}
		return rest[i].rank < rest[j].rank
	})
	out := make([]abi.ChunkHit, 0, min(k, len(accs)))
	for _, a := range accs {
		if len(out) == k {
			break
		}
		out = append(out, a.hit)
	}
	return out
}
