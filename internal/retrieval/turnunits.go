package retrieval

import (
	"sort"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Turn units (issue 30, item 2): a chat chunk packs several turns, but a question is
// answered by a turn, not by a chunk. The chunk stays the context a client reads;
// each turn that carries evidence is its own place in the ranking. A chunk's hit
// cites its best turns where the chunk ranks; a turn of it that scores too little
// to be cited there is not dropped but ranked by its own score among the other
// hits, as a further hit on the same chunk citing that turn.

// Unit is one place in a ranked list: the hit it shows (an index the caller
// chose), the evidence level it ranks at (lower first, as in levels.go), its score
// within the level, and the refs it cites.
type Unit struct {
	Hit   int
	Level int
	Score float64
	Refs  []string
}

// before says whether a ranks above b: lower level first, then higher score.
func (a Unit) before(b Unit) bool {
	if a.Level != b.Level {
		return a.Level < b.Level
	}
	return a.Score > b.Score
}

// MergeTurnUnits merges primary (the chunk hits in their ranked order, each once)
// with turns (further units on the same hits, any order) by level and score. A
// turn unit never ranks above its own hit's primary unit: one that would is cited
// by that unit instead (its refs appended). Consecutive units of one hit are
// merged into one, refs in order, so a hit appears again only when other hits
// rank between its turns. The result is the primary order with the turn units
// interleaved; its length is at most len(primary) + len(turns).
func MergeTurnUnits(primary, turns []Unit) []Unit {
	ts := append([]Unit(nil), turns...)
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].before(ts[j]) || ts[j].before(ts[i]) {
			return ts[i].before(ts[j])
		}
		return ts[i].Hit < ts[j].Hit // ties: a deterministic order
	})
	placed := map[int]bool{}
	var out []Unit
	emit := func(u Unit) {
		if n := len(out); n > 0 && out[n-1].Hit == u.Hit {
			out[n-1].Refs = append(out[n-1].Refs, u.Refs...)
			return
		}
		u.Refs = append([]string(nil), u.Refs...)
		out = append(out, u)
	}
	// early holds turn units whose hit's primary unit is not placed yet; they join
	// that unit when it comes.
	early := map[int][]string{}
	j := 0
	for _, p := range primary {
		for j < len(ts) && ts[j].before(p) {
			if placed[ts[j].Hit] {
				emit(ts[j])
			} else {
				early[ts[j].Hit] = append(early[ts[j].Hit], ts[j].Refs...)
			}
			j++
		}
		p.Refs = append(append([]string(nil), p.Refs...), early[p.Hit]...)
		delete(early, p.Hit)
		placed[p.Hit] = true
		emit(p)
	}
	for ; j < len(ts); j++ {
		if placed[ts[j].Hit] {
			emit(ts[j])
		}
	}
	return out
}

// ApplyUnits builds the hit list of units: each unit shows hits[u.Hit] citing
// u.Refs (SourceRef the first) with u.Score; a unit showing a hit shown before it
// (a turn ranked on its own) takes its snippet from snippet(its first ref) when
// that is not empty, so the two places show what each cites.
func ApplyUnits(hits []abi.ChunkHit, units []Unit, snippet func(ref string) string) []abi.ChunkHit {
	out := make([]abi.ChunkHit, 0, len(units))
	shown := map[int]bool{}
	for _, u := range units {
		h := hits[u.Hit]
		if len(u.Refs) > 0 {
			h.SourceRefs = u.Refs
			h.SourceRef = u.Refs[0]
		}
		h.Score = u.Score
		if shown[u.Hit] && snippet != nil && len(u.Refs) > 0 {
			if s := snippet(u.Refs[0]); s != "" {
				h.Snippet = s
			}
		}
		shown[u.Hit] = true
		out = append(out, h)
	}
	return out
}

// TurnLevel is the evidence level a turn ranked on its own takes: the level of
// the chunks that say as many of the query's rarer words as the turn (or as the
// turn it answers) says — of is how many the query has, said how many the turn
// says — and never above its own chunk's level. A turn saying all of them ranks
// with the chunks saying all; one saying one with the one-word (OR) hits; one
// saying none (only common words, or the reply to such a turn) after those.
func TurnLevel(chunkLevel, said, of int) int {
	l := chunkLevel
	switch {
	case of == 0 || said >= of:
	case said >= 2:
		l = of - said
	case said == 1:
		l = OrLevel
	default:
		l = OrLevel + 1
	}
	return max(l, chunkLevel)
}

// NamedTurns splits a chunk's turns (authors in message order, folded) into the
// turns by a participant the query names and the others, each in message order.
// A chunk that says none of the query's words but was found through the person
// (or the date) the query names cites that person's turns where it ranks; the
// others rank on their own below instead of not being cited (issue 30, item 3:
// "what did Joanna do in May" is answered by what Joanna said then, or by what
// she was told). Both are empty when no turn is by a named participant or every
// turn is.
func NamedTurns(authors []string, named map[string]bool) (own, other []int) {
	for i, a := range authors {
		if named[a] {
			own = append(own, i)
		} else {
			other = append(other, i)
		}
	}
	if len(own) == 0 || len(other) == 0 {
		return nil, nil
	}
	return own, other
}
