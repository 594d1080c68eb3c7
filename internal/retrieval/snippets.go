package retrieval

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Snippets: a backend returns each hit's chunk text (index.Hit) and the engine
// cuts every snippet from it, so a hit's snippet is the same whichever backend
// found it. A matched chunk shows its best window of the query's words
// (windowSnippet: the window FTS5's snippet() picks, which the ranking has always
// read, e.g. to demote duplicates); a list cut around chosen words starts near
// the first of them (analysis.PlainSnippet).

// Snippet tunables.
const (
	// windowWords is the length of a matched chunk's snippet window (words):
	// FTS5 snippet()'s 40, which the duplicate test (dupKey) was tuned on.
	windowWords = 40
	// nearLead is how much text a snippet around chosen words keeps before the
	// first of them (bytes) when it cuts the text first (nearSnippet).
	nearLead = 200
	// fillCut bounds the text of a fill-level hit its snippet is cut from
	// (runes), and keyCut that of a hit read by key (Hits): cuts from the days
	// the store sent only these prefixes, kept so snippets did not change.
	fillCut, keyCut = 2000, 400
)

// cut returns hs as hits whose snippets start near the first of words (folded).
func cut(hs []index.Hit, words []string) []abi.ChunkHit {
	if hs == nil {
		return nil
	}
	out := make([]abi.ChunkHit, len(hs))
	for i, h := range hs {
		out[i] = h.ChunkHit
		out[i].Snippet = analysis.PlainSnippet(h.Text, words)
	}
	return out
}

// match runs m on st: each hit's snippet is its best window of the query's
// phrases (windowSnippet), or, when near is not nil, is cut near the first of
// those words (nearSnippet).
func match(ctx context.Context, st index.Backend, m index.Match, near []string) ([]abi.ChunkHit, error) {
	hs, err := st.Match(ctx, m)
	if err != nil || hs == nil {
		return nil, err
	}
	out := make([]abi.ChunkHit, len(hs))
	var phrases [][]string
	if near == nil {
		phrases = phraseStems(m.Query)
	}
	for i, h := range hs {
		out[i] = h.ChunkHit
		if near != nil {
			out[i].Snippet = nearSnippet(prefix(h.Text, fillCut), near)
		} else {
			out[i].Snippet = windowSnippet(h.Text, phrases)
		}
	}
	return out, nil
}

// WindowSnippet is the snippet of a chunk with text matching q's phrases
// (windowSnippet); exported for the backends' tests, which prove it equal to
// FTS5's snippet().
func WindowSnippet(text string, q index.Query) string {
	return windowSnippet(text, phraseStems(q))
}

// phraseStems are q's phrases as the index terms of their words.
func phraseStems(q index.Query) [][]string {
	out := make([][]string, 0, len(q.Phrases))
	for _, p := range q.Phrases {
		var st []string
		for _, w := range analysis.Words(strings.Join(p, " ")) {
			st = append(st, analysis.Stem(w))
		}
		out = append(out, st)
	}
	return out
}

// windowSnippet is text's windowWords-word window that says the most distinct
// phrases (1000 each, 1 for each repeat), centred on the phrases it holds, or a
// window starting a sentence (after "." or ":") when that scores better by its
// bonus (120 at the text's start, 100 elsewhere): FTS5's snippet() rule
// (fts5_aux.c), on the analyzer's words. It is marked "…" where it cuts the
// text, with runs of white space made one space.
func windowSnippet(text string, phrases [][]string) string {
	// Words and phrase terms are compared as small ids: a phrase's term gets its
	// own, and a word the id of the term its stem is (noTerm when none). Only a
	// word whose first byte starts a term can match one (a Porter stem keeps its
	// word's first byte): the others are not stemmed and get the id of "", as
	// their stem was "" before ids (a "" term, which the analyzer never makes,
	// would still match them).
	const noTerm = -2
	termID := map[string]int32{"": -1}
	var firsts [256]bool
	pids := make([][]int32, len(phrases))
	for i, p := range phrases {
		pids[i] = make([]int32, len(p))
		for k, t := range p {
			id, ok := termID[t]
			if !ok {
				id = int32(len(termID) - 1)
				termID[t] = id
			}
			pids[i][k] = id
			if t != "" {
				firsts[t[0]] = true
			}
		}
	}
	// A chunk says about one word per six bytes; most of its words repeat.
	stems := make([]int32, 0, len(text)/6+1) // each word's term id
	spans := make([][2]int32, 0, len(text)/6+1)
	var memo map[string]int32
	analysis.Tokens(text, func(w []byte, start, end int) {
		st := int32(-1)
		if firsts[w[0]] {
			var ok bool
			if st, ok = memo[string(w)]; !ok {
				if st, ok = termID[analysis.Stem(string(w))]; !ok {
					st = noTerm
				}
				if memo == nil {
					memo = map[string]int32{}
				}
				memo[string(w)] = st
			}
		}
		stems = append(stems, st)
		spans = append(spans, [2]int32{int32(start), int32(end)})
	})
	n := len(stems)
	// Phrase instances in text order (ties: phrase order).
	type inst struct{ phrase, pos, size int }
	var insts []inst
	for pos := 0; pos < n; pos++ {
		for ip, p := range pids {
			if len(p) == 0 || pos+len(p) > n || stems[pos] != p[0] {
				continue
			}
			ok := true
			for k, s := range p[1:] {
				if stems[pos+1+k] != s {
					ok = false
					break
				}
			}
			if ok {
				insts = append(insts, inst{ip, pos, len(p)})
			}
		}
	}
	seen := make([]bool, len(phrases))
	// score is the window from word from: its score and where it would start
	// centred on its instances.
	score := func(from int) (int, int) {
		clear(seen)
		sc, first, last := 0, -1, 0
		i, _ := slices.BinarySearchFunc(insts, from, func(in inst, pos int) int { return cmp.Compare(in.pos, pos) })
		for ; i < len(insts) && insts[i].pos < from+windowWords; i++ {
			in := insts[i]
			if seen[in.phrase] {
				sc++
			} else {
				sc += 1000
				seen[in.phrase] = true
			}
			if first < 0 {
				first = in.pos
			}
			last = in.pos + in.size
		}
		adj := first - (windowWords-(last-first))/2
		if adj+windowWords > n {
			adj = n - windowWords
		}
		return sc, max(adj, 0)
	}
	// Sentence starts: the first word, and each word after "." or ":" and white space.
	starts := []int{}
	for i, sp := range spans {
		if i == 0 {
			starts = append(starts, 0)
			continue
		}
		j := int(sp[0]) - 1
		for j >= 0 && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r') {
			j--
		}
		if j != int(sp[0])-1 && j >= 0 && (text[j] == '.' || text[j] == ':') {
			starts = append(starts, i)
		}
	}
	best, bestStart := 0, 0
	for _, in := range insts {
		sc, adj := score(in.pos)
		if sc > best {
			best, bestStart = sc, adj
		}
		if len(starts) > 0 && n > windowWords {
			jj := 0
			for jj < len(starts)-1 && starts[jj+1] <= in.pos {
				jj++
			}
			if s := starts[jj]; s < in.pos {
				sc, _ := score(s)
				if s == 0 {
					sc += 120
				} else {
					sc += 100
				}
				if sc > best {
					best, bestStart = sc, s
				}
			}
		}
	}
	from, to, out := 0, len(text), ""
	if bestStart > 0 && bestStart < n {
		from = int(spans[bestStart][0])
		out = "…"
	}
	end := bestStart + windowWords - 1
	cutEnd := end < n-1
	if cutEnd {
		to = int(spans[end][1])
	}
	out += analysis.CollapseSpace(text[from:to])
	if cutEnd {
		out += "…"
	}
	return out
}

// nearSnippet is analysis.PlainSnippet on the part of text around the first of
// words (a chunk's text can be long; the snippet is short).
func nearSnippet(text string, words []string) string {
	best := -1
	lower := strings.ToLower(text)
	for _, t := range words {
		if t == "" {
			continue
		}
		if i := strings.Index(lower, t); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if len(lower) != len(text) {
		best = -1 // case folding changed byte offsets: no cut
	}
	from, to := 0, len(text)
	if best > nearLead {
		from = best - nearLead
	}
	if to-from > 8*analysis.SnippetChars+400 {
		to = from + 8*analysis.SnippetChars + 400
	}
	for from > 0 && from < len(text) && !utf8.RuneStart(text[from]) {
		from++
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	out := analysis.PlainSnippet(text[from:to], words)
	if from > 0 && !strings.HasPrefix(out, "…") {
		out = "…" + out
	}
	return out
}

// prefix is text's first n runes.
func prefix(text string, n int) string {
	for i := range text {
		if n == 0 {
			return text[:i]
		}
		n--
	}
	return text
}
