package retrieval

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Conversation-aware citation stage (issue 16, item 2).
//
// A chat chunk packs up to a few dozen consecutive turns (the store's chunking). What a person asks
// about is usually said in one turn, and the answer is often in the turn after it,
// by the other speaker ("How long have you been married?" — "5 years already!"),
// which shares no word with the question. So search scores chat turns, not chunks:
// each turn by bm25 over its own text (idf from the store, length normalised
// against the turns being ranked); each turn then also receives a share of the score
// of the turn before it when another person wrote that one (the reply); a question naming a participant favours
// that participant's turns. The chunk following a candidate in the same source is
// read too, so a chunk boundary between a question and its answer cannot hide the
// answer. A chunk ranks by its best turn, and a
// chat hit cites its turns best first, those scoring at least CiteShare of the next
// hit's best turn (at least its best one), so the refs a client walks in rank order
// come close to a ranking of the turns themselves.

// KindChat is the source kind of chat chunks (abi.KindChat), whose messages
// are turns.
const KindChat = abi.KindChat

// chatTurn is one message of a candidate chat chunk.
type chatTurn struct {
	hit    int // index in the candidate hits
	msg    int // index of the message in its chunk
	ref    string
	author string // folded
	words  []string
	length int     // words of the message as rendered (author, time, title): its bm25 length
	text   string  // the message as rendered (a turn unit's snippet)
	tells  bool    // its text tells a time (SaysWhen)
	asks   bool    // the turn asks a question
	s, f   float64 // own score; with what earlier turns pass on
	n      int     // distinct query words it says
	rare   int     // distinct rarer query words (PruneFrequent) it says: its own evidence level
}

// ChatAuthor splits a rendered chat message "Author (YYYY-MM-DD HH:MM): text" into
// the author and the text.
func ChatAuthor(msg string) (author, text string) {
	i := strings.Index(msg, "): ")
	if i < 0 || i > 200 {
		return "", msg
	}
	j := strings.LastIndex(msg[:i], " (")
	if j < 0 {
		return "", msg
	}
	return msg[:j], msg[i+3:]
}

// OrderByTurns ranks hits (some of them chat chunks) by their best message as
// described above, level by level (a hit not in level: after all), and sets each
// chat hit's citations. terms are the query's content words (common ones included:
// bm25's idf weighs them). It returns the hits reordered and the ids of the hits it
// cited. nChunks is the store's chunk count (idf). The steps: read the hits'
// messages (hitTurns), let query words naming a participant select that
// participant's turns (namedSpeakers), score every turn (scoreTurns), pass a
// share of each turn's score to the reply after it and lift a chunk that opens
// with an answer to its question's level (passReplies), favour the turns telling
// a time when query asks when (boostTimes), rank the hits by level, then by their
// best turn or message (rankHits), cite each chat hit's best turns (citeTurns) and
// rank the turns with evidence it does not cite on their own (applyTurnUnits).
// query is the query as written (AsksWhen reads it); speakers are the folded
// names of the contacts it names (ParsedQuery.Speakers), each a named
// participant.
func OrderByTurns(ctx context.Context, p *Params, msgs *Messages, hits []abi.ChunkHit, level map[string]int, terms []Term, minCite int, nChunks int, query string, speakers []string) ([]abi.ChunkHit, map[string]bool, error) {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	chunks, err := msgs.Read(ctx, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("score turns: %w", err)
	}
	ht := hitTurns(hits, chunks)
	named, scoring := namedSpeakers(terms, ht.authors)
	for _, a := range speakers {
		if ht.authors[a] {
			named[a] = true
		}
	}
	avg := ht.avgLength()
	rareTerms := PruneFrequent(p, scoring, nChunks) // issue 30 item 2: a turn unit's level (TurnLevel)
	scoreTurns(p, ht.turns, msgs, BM25Scorer(msgs, nChunks, scoring, avg), scoring, rareTerms, named)
	lev := func(i int) int {
		if l, ok := level[hits[i].ID]; ok {
			return l
		}
		return 1 << 30
	}
	answers := passReplies(p, hits, ht.turns, lev)
	boostTimes(p, ht.turns, query)
	bmAll := BM25Scorer(msgs, nChunks, terms, avg) // other messages: a name is a word
	best := bestScores(len(hits), ht, bmAll)
	levA := func(i int) int { // a hit's level, or its question's (passReplies)
		if l, ok := answers[i]; ok {
			return l
		}
		return lev(i)
	}
	out, order, pos := rankHits(hits, best, levA)
	cited, units := citeTurns(p, out, order, pos, best, ht.turns, minCite, named, levA, len(rareTerms))
	return applyTurnUnits(out, order, units, ht.turns, levA), cited, nil
}

// otherMessage is a message of a hit that is not a chat turn (scored like ByMessage).
type otherMessage struct {
	hit   int
	words []string
}

// turnsOfHits are the hits' chat turns, their other messages and the chats'
// authors (folded).
type turnsOfHits struct {
	turns   []chatTurn
	others  []otherMessage
	authors map[string]bool
}

// hitTurns splits the hits' chunks into chat turns (a chat chunk whose message
// spans match its refs) and other messages.
func hitTurns(hits []abi.ChunkHit, chunks map[string]index.ChunkText) turnsOfHits {
	ht := turnsOfHits{authors: map[string]bool{}}
	for i, h := range hits {
		c, ok := chunks[h.ID]
		if !ok {
			continue
		}
		if h.SourceKind == KindChat && len(c.Spans) > 0 && len(c.Spans) == len(h.SourceRefs) {
			for m := range c.Spans {
				seg, ok := c.Message(m)
				if !ok {
					continue
				}
				a, text := ChatAuthor(seg)
				a = strings.Join(analysis.Words(a), " ")
				if a != "" {
					ht.authors[a] = true
				}
				ws := analysis.Words(text)
				// Its length is the message as other messages are measured (author,
				// time and the chunk's title too), so a bare chat line does not
				// outrank an e-mail or a note only for being short.
				n := len(analysis.Words(seg)) + len(analysis.Words(c.Title))
				ht.turns = append(ht.turns, chatTurn{hit: i, msg: m, ref: h.SourceRefs[m], author: a, words: ws, length: n, asks: strings.Contains(text, "?"), text: seg, tells: SaysWhen(text)})
			}
			continue
		}
		segs := []string{c.Text}
		if len(c.Spans) > 0 {
			segs = segs[:0]
			for m := range c.Spans {
				if seg, ok := c.Message(m); ok {
					segs = append(segs, seg)
				}
			}
		}
		for _, seg := range segs {
			ht.others = append(ht.others, otherMessage{hit: i, words: append(analysis.Words(c.Title), analysis.Words(seg)...)})
		}
	}
	return ht
}

// avgLength is the mean length of the turns and other messages (at least 1): the
// bm25 length normalisation is against the messages being ranked.
func (ht turnsOfHits) avgLength() float64 {
	total, count := 0.0, 0
	for _, t := range ht.turns {
		total += float64(t.length)
		count++
	}
	for _, o := range ht.others {
		total += float64(len(o.words))
		count++
	}
	return max(1, total/float64(max(count, 1)))
}

// namedSpeakers splits terms into the participants they name (query words naming
// some but not all authors select those authors' turns instead of being matched
// as words) and the terms that score.
func namedSpeakers(terms []Term, authors map[string]bool) (named map[string]bool, scoring []Term) {
	nameOf := map[string][]string{} // name word → authors it names
	for a := range authors {
		for _, w := range strings.Fields(a) {
			nameOf[w] = append(nameOf[w], a)
		}
	}
	named = map[string]bool{}
	for _, t := range terms {
		if as, ok := nameOf[t.Word]; ok && len(as) < len(authors) {
			for _, a := range as {
				named[a] = true
			}
			continue
		}
		scoring = append(scoring, t)
	}
	return named, scoring
}

// scoreTurns sets each turn's own score (bm25 of its words, × 1 + SpeakerBoost
// for a named participant's turn), the distinct query words it says (and of
// them the rarer ones, rareTerms), and its score with what earlier turns pass on
// (so far its own).
func scoreTurns(p *Params, turns []chatTurn, msgs *Messages, bm func(ws []string, length int) float64, scoring, rareTerms []Term, named map[string]bool) {
	wantStem := map[string]bool{}
	for _, t := range scoring {
		wantStem[t.Stem] = true
	}
	rareStem := map[string]bool{}
	for _, t := range rareTerms {
		rareStem[t.Stem] = true
	}
	for i := range turns {
		t := &turns[i]
		t.s = bm(t.words, t.length)
		seen := map[string]bool{}
		for _, w := range t.words {
			if st := msgs.Stem(w); wantStem[st] && !seen[st] {
				seen[st] = true
				t.n++
			}
		}
		for st := range seen {
			if rareStem[st] {
				t.rare++
			}
		}
		if named[t.author] {
			t.s *= 1 + p.SpeakerBoost
		}
		t.f = t.s
	}
}

// passReplies passes what a turn says on to the turn after it by another person
// (ReplyShare of its score), across consecutive chunks of one source, and returns
// the hits that open with the answer to a question ending the chunk before them,
// with that question's level (lev gives a hit's level).
func passReplies(p *Params, hits []abi.ChunkHit, turns []chatTurn, lev func(int) int) map[int]int {
	seq := make([]int, len(turns))
	for i := range seq {
		seq[i] = i
	}
	sort.SliceStable(seq, func(a, b int) bool {
		ta, tb := turns[seq[a]], turns[seq[b]]
		ha, hb := hits[ta.hit], hits[tb.hit]
		if ha.SourceID != hb.SourceID {
			return ha.SourceID < hb.SourceID
		}
		if ha.Seq != hb.Seq {
			return ha.Seq < hb.Seq
		}
		return ta.msg < tb.msg
	})
	// A chunk that opens with the answer to a question ending the chunk before it
	// ranks at that question's level (it would otherwise come after every hit
	// saying a query word, or after the fill): the chunk boundary must not hide the
	// answer. LoCoMo search R@5/10/25/50 64.6/71.8/78.4/81.7 → 64.7/72.1/78.9/82.1;
	// the generated corpus is unchanged.
	answers := map[int]int{} // hit → level of the question in the chunk before it
	for x := 1; x < len(seq); x++ {
		prev, t := &turns[seq[x-1]], &turns[seq[x]]
		ph, th := hits[prev.hit], hits[t.hit]
		if prev.hit != t.hit && (ph.SourceID != th.SourceID || th.Seq != ph.Seq+1) {
			continue
		}
		if prev.hit != t.hit && prev.asks && prev.n > 0 && prev.author != t.author && lev(prev.hit) < FillLevel && lev(t.hit) >= FillLevel {
			if l, ok := answers[t.hit]; !ok || lev(prev.hit) < l {
				answers[t.hit] = lev(prev.hit)
			}
		}
		if prev.author != t.author {
			t.f += p.ReplyShare * prev.s
		}
	}
	return answers
}

// boostTimes: a question asking when (AsksWhen) scores the turns telling a time
// (SaysWhen) that have evidence × (1 + TimeBoost) (issue 30 item 3).
func boostTimes(p *Params, turns []chatTurn, query string) {
	if p.TimeBoost <= 0 || !AsksWhen(query) {
		return
	}
	for i := range turns {
		if t := &turns[i]; t.f > 0 && t.tells {
			t.s *= 1 + p.TimeBoost
			t.f *= 1 + p.TimeBoost
		}
	}
}

// bestScores is each hit's score: its best turn's own score, or, for a chunk
// none of whose turns says a query word, the best its turns receive from the
// turns before them (the answer after a chunk boundary); another hit's best
// message by bmAll. Ranking a chunk that says the words by the received score
// too cost the generated corpus's keyword queries (search recall@10 0.906 →
// 0.897).
func bestScores(n int, ht turnsOfHits, bmAll func(ws []string, length int) float64) []float64 {
	best := make([]float64, n)
	noOwn := make([]bool, n)
	for _, t := range ht.turns {
		best[t.hit] = max(best[t.hit], t.s)
	}
	for _, t := range ht.turns {
		if best[t.hit] == 0 || noOwn[t.hit] {
			noOwn[t.hit] = true
			best[t.hit] = max(best[t.hit], t.f)
		}
	}
	for _, o := range ht.others {
		best[o.hit] = max(best[o.hit], bmAll(o.words, len(o.words)))
	}
	return best
}

// rankHits orders the hits by level (lev), then by best score, and sets each
// hit's Score to its best. order[p] is the hit at position p, pos the inverse.
func rankHits(hits []abi.ChunkHit, best []float64, lev func(int) int) (out []abi.ChunkHit, order, pos []int) {
	score := make(map[string]float64, len(hits))
	order = make([]int, len(hits))
	for i, h := range hits {
		order[i] = i
		score[h.ID] = best[i]
	}
	sort.SliceStable(order, func(a, b int) bool {
		la, lb := lev(order[a]), lev(order[b])
		if la != lb {
			return la < lb
		}
		return score[hits[order[a]].ID] > score[hits[order[b]].ID]
	})
	out = make([]abi.ChunkHit, len(hits))
	pos = make([]int, len(hits)) // hit index → position in out
	for p, i := range order {
		out[p] = hits[i]
		out[p].Score = score[hits[i].ID]
		pos[i] = p
	}
	return out, order, pos
}

// citeTurns sets each chat hit's citations in out: its turns best first, down to
// CiteShare of the next hit's best turn, and returns the ids of the hits cited
// and the turns to rank on their own (turn units, issue 30 items 2 and 3; their
// Hit is a position in out): those with evidence it did not cite, the turn each
// of them responds to, and — for a chunk found only through the participant the
// query names (named) — the other participants' turns. levA gives a hit's level,
// nRare how many rarer words the query has (TurnLevel).
func citeTurns(p *Params, out []abi.ChunkHit, order, pos []int, best []float64, turns []chatTurn, minCite int, named map[string]bool, levA func(int) int, nRare int) (map[string]bool, []Unit) {
	byHit := map[int][]chatTurn{}
	for _, t := range turns {
		byHit[t.hit] = append(byHit[t.hit], t)
	}
	cited := map[string]bool{}
	var turnUnits []Unit // issue 30 item 2: turns ranked on their own (below)
	for i, ts := range byHit {
		at := pos[i]
		next := best[i] // the last hit: its own best
		if at+1 < len(out) {
			next = best[order[at+1]]
		}
		// A turn saying a query word is cited by its own score; one saying none
		// (an answer) by what the turn before it passes on.
		key := func(t chatTurn) float64 {
			if t.n > 0 {
				return t.s
			}
			return t.f
		}
		sort.SliceStable(ts, func(a, b int) bool { return key(ts[a]) > key(ts[b]) })
		// A turn saying at least minWords of the query's words is cited however it
		// ranks (as CiteHits does for other messages); another (saying fewer, or
		// none but answering a turn that does) when its score ranks it near the
		// next hit's best (the last hit: its own).
		minWords, most := 1, 0
		for _, t := range ts {
			most = max(most, t.n)
		}
		if most >= minCite {
			minWords = minCite
		}
		// The reply to a cited question that says a query word (the next turn, by
		// another person, in this chunk) is cited after the hit's own cited turns:
		// the question carries the words, the answer follows it. Measured on LoCoMo
		// (search R@5/10/25/50): 63.3/69.6/74.9/77.6 → 64.6/71.8/78.4/81.7, every
		// conversation gaining; replying to any cited turn (not only a question)
		// gave 63.2/69.7/76.5/79.5, and citing each reply right after its turn R@5
		// 62.0. The generated corpus is unchanged.
		byMsg := make(map[int]chatTurn, len(ts))
		for _, t := range ts {
			byMsg[t.msg] = t
		}
		var refs, replies []string
		done := map[int]bool{}
		for j, t := range ts {
			if done[t.msg] || !(j == 0 || t.n >= minWords || (t.f > 0 && t.f >= p.CiteShare*next)) {
				continue
			}
			done[t.msg] = true
			refs = append(refs, t.ref)
			if r, ok := byMsg[t.msg+1]; ok && t.n > 0 && t.asks && r.author != t.author && !done[r.msg] {
				done[r.msg] = true
				replies = append(replies, r.ref)
			}
		}
		refs = append(refs, replies...)
		if ts[0].f <= 0 {
			// Issue 30 item 3: found only through the person or date the query
			// names, the chunk cites that person's turns; the others follow on their own.
			authors := make([]string, len(ts))
			for x, t := range ts {
				authors[x] = t.author
			}
			own, other := NamedTurns(authors, named)
			if len(own) == 0 || p.NamedFirst == 0 {
				continue // nothing said here: CiteHits decides (all refs stay)
			}
			refs = refs[:0]
			for _, x := range own {
				refs = append(refs, ts[x].ref)
			}
			for _, x := range other {
				turnUnits = append(turnUnits, Unit{Hit: at, Level: levA(i), Refs: []string{ts[x].ref}})
			}
		}
		out[at].SourceRefs = refs
		out[at].SourceRef = refs[0]
		cited[out[at].ID] = true
		// Issue 30 item 2: a turn with evidence not cited here ranks on its own
		// (MergeTurnUnits), with the reply to it when it asks.
		for _, t := range ts {
			if k := key(t); !done[t.msg] && k > 0 && p.TurnShare > 0 {
				done[t.msg] = true
				said := t.rare
				if q, ok := byMsg[t.msg-1]; ok && q.author != t.author {
					said = max(said, q.rare) // a reply: the evidence of what it answers
				}
				u := Unit{Hit: at, Level: TurnLevel(levA(i), said, nRare), Score: p.TurnShare * k, Refs: []string{t.ref}}
				if r, ok := byMsg[t.msg+1]; ok && t.n > 0 && t.asks && r.author != t.author && !done[r.msg] {
					done[r.msg] = true
					u.Refs = append(u.Refs, r.ref)
				}
				turnUnits = append(turnUnits, u)
			}
		}
		// The turn another person said just before a turn with evidence (what it
		// responds to) ranks on its own too, after the turns saying query words,
		// with ReplyShare of that turn's score (the share a turn passes on in an
		// exchange).
		for _, t := range ts {
			if nx, ok := byMsg[t.msg+1]; ok && !done[t.msg] && key(t) == 0 && nx.n > 0 && nx.author != t.author && p.TurnShare > 0 {
				done[t.msg] = true
				turnUnits = append(turnUnits, Unit{Hit: at, Level: TurnLevel(levA(i), 0, nRare), Score: p.ReplyShare * key(nx), Refs: []string{t.ref}})
			}
		}
	}
	return cited, turnUnits
}

// applyTurnUnits interleaves the turn units with the ranked hits out (order[p]
// is the hit at position p; levA its level) by level and score (MergeTurnUnits):
// a unit showing a hit again cites its turn, with that turn as its snippet.
func applyTurnUnits(out []abi.ChunkHit, order []int, units []Unit, turns []chatTurn, levA func(int) int) []abi.ChunkHit {
	if len(units) == 0 {
		return out
	}
	primary := make([]Unit, len(out))
	for p := range out {
		primary[p] = Unit{Hit: p, Level: levA(order[p]), Score: out[p].Score, Refs: out[p].SourceRefs}
	}
	text := map[string]string{}
	for _, t := range turns {
		text[t.ref] = t.text
	}
	return ApplyUnits(out, MergeTurnUnits(primary, units), func(ref string) string { return analysis.PlainSnippet(text[ref], nil) })
}
