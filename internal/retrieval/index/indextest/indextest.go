// Package indextest is the conformance suite of the backend contract
// (internal/retrieval/index): every backend runs Run over its own store, filled
// with the same fixture through its own writer, and must answer alike. The
// ranking above it (internal/retrieval) relies on nothing the suite does not
// check.
package indextest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Message is one message of a fixture source.
type Message struct {
	Ref, Author string
	Time        time.Time
	Text        string
}

// Source is one fixture source, as a backend's writer takes it.
type Source struct {
	Kind, ID, Title string // Kind: abi.KindEmail, abi.KindChat or abi.KindDocument
	Messages        []Message
}

// Open fills a fresh store of the backend with srcs (through its own writer)
// and returns one read call on it.
type Open func(t *testing.T, srcs []Source) index.Backend

// Fixture is the suite's store: mail, chat and documents over several months,
// with words shared across sources, phrases, diacritics and stopwords. Its last
// two sources are written last but are the oldest (at the same time), so
// "newest" can be told from "written last".
func Fixture() []Source {
	at := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return t
	}
	return []Source{
		{Kind: abi.KindEmail, ID: "email:budget@corp.example", Title: "Q3 budget review", Messages: []Message{
			{Ref: "budget@corp.example", Author: "Alice Martin", Time: at("2026-01-05T09:00:00Z"), Text: "The Q3 budget review moved to Thursday. Bring the vendor invoices and the travel budget."},
			{Ref: "budget-2@corp.example", Author: "Bob Stone", Time: at("2026-01-06T10:30:00Z"), Text: "Thursday works. The vendor invoices are in the shared folder; travel is over budget by ten percent."},
		}},
		{Kind: abi.KindChat, ID: "slack:#phoenix", Title: "#phoenix", Messages: []Message{
			{Ref: "slack:phoenix:1", Author: "Carla Diaz", Time: at("2026-02-10T14:00:00Z"), Text: "Phoenix launch checklist is ready for review."},
			{Ref: "slack:phoenix:2", Author: "Dev Patel", Time: at("2026-02-10T14:02:00Z"), Text: "Great, the launch date stays on March 3rd."},
			{Ref: "slack:phoenix:3", Author: "Carla Diaz", Time: at("2026-02-10T14:05:00Z"), Text: "The brake pads of the company van need replacing before launch week."},
		}},
		{Kind: abi.KindChat, ID: "slack:#random", Title: "#random", Messages: []Message{
			{Ref: "slack:random:1", Author: "Eve Rossi", Time: at("2026-03-01T08:00:00Z"), Text: "Café au lait or espresso? The café downstairs reopened."},
			{Ref: "slack:random:2", Author: "Dev Patel", Time: at("2026-03-01T08:01:00Z"), Text: "Espresso, always. Also my turtles escaped again."},
		}},
		{Kind: abi.KindDocument, ID: "doc:notes/car.md", Title: "Car repair", Messages: []Message{
			{Ref: "notes/car.md", Time: at("2026-03-15T00:00:00Z"), Text: "# Car repair\n\nThe brake pads were replaced at the garage on Main Street. The pads cost 120 euros; the mechanic said the discs are fine.\n\nNext service: oil change in September."},
		}},
		{Kind: abi.KindDocument, ID: "doc:notes/garden.md", Title: "Garden", Messages: []Message{
			{Ref: "notes/garden.md", Time: at("2026-04-20T00:00:00Z"), Text: "# Garden\n\nPlant tomatoes after the last frost. The turtles love the lettuce; keep them away from the vegetable patch."},
		}},
		{Kind: abi.KindDocument, ID: "doc:archive/winter.md", Title: "Winter", Messages: []Message{
			{Ref: "archive/winter.md", Time: at("2025-11-20T00:00:00Z"), Text: "The turtles hibernated in the cellar over winter."},
		}},
		{Kind: abi.KindDocument, ID: "doc:archive/cellar.md", Title: "Cellar", Messages: []Message{
			{Ref: "archive/cellar.md", Time: at("2025-11-20T00:00:00Z"), Text: "The cellar stays cold; the turtles hibernated there again."},
		}},
	}
}

// chunk is one chunk as the suite reads it back.
type chunk struct {
	hit   abi.ChunkHit
	text  string          // its text (Texts)
	terms map[string]bool // index terms of its title and text
	words []string        // folded words of its text, in order
}

// Run checks a backend against the contract over Fixture.
func Run(t *testing.T, open Open) {
	ctx := context.Background()
	srcs := Fixture()
	b := open(t, srcs)
	if b == nil {
		t.Fatal("the backend's read call is nil over a store holding the fixture")
	}
	chunks := readAll(t, ctx, b, srcs)

	t.Run("stats", func(t *testing.T) {
		st := b.Stats()
		if st.Chunks != len(chunks) {
			t.Errorf("Stats().Chunks = %d, the postings of every word find %d chunks", st.Chunks, len(chunks))
		}
		var latest int64
		for _, c := range chunks {
			latest = max(latest, c.hit.TimestampMS)
		}
		var want int64
		for _, s := range srcs {
			for _, m := range s.Messages {
				want = max(want, m.Time.UnixMilli())
			}
		}
		if st.Latest != want || latest > want {
			t.Errorf("Stats().Latest = %d, want the newest message's time %d", st.Latest, want)
		}
		if st.Generation.ID == "" && st.Generation.Store == nil {
			t.Error("Stats().Generation is empty: caches could not tell stores apart")
		}
	})

	t.Run("document frequency equals postings", func(t *testing.T) {
		// For every word of the fixture: DocFreq equals the number of chunks
		// whose index terms hold the word's term, and the number the postings find.
		for _, w := range fixtureWords(srcs) {
			df, err := b.DocFreq(ctx, w)
			if err != nil {
				t.Fatalf("DocFreq(%q): %v", w, err)
			}
			ps, err := b.Postings(ctx, []index.Query{index.Words(index.All, w)}, 1000)
			if err != nil {
				t.Fatalf("Postings(%q): %v", w, err)
			}
			have := 0
			for _, c := range chunks {
				if c.terms[analysis.Stem(w)] {
					have++
				}
			}
			if df != len(ps) || df != have {
				t.Errorf("word %q: DocFreq %d, postings %d, chunks saying it %d", w, df, len(ps), have)
			}
		}
		if df, err := b.DocFreq(ctx, "zyzzyvaqq"); err != nil || df != 0 {
			t.Errorf("DocFreq of a word no chunk says = %d, %v; want 0", df, err)
		}
	})

	t.Run("vocabulary", func(t *testing.T) {
		terms := map[string]bool{}
		for _, c := range chunks {
			for term := range c.terms {
				terms[term] = true
			}
		}
		n, err := b.Vocabulary(ctx, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(terms) {
			t.Errorf("Vocabulary = %d, the chunks say %d distinct index terms", n, len(terms))
		}
		if n, err := b.Vocabulary(ctx, 5); err != nil || n != 5 {
			t.Errorf("Vocabulary(up to 5) = %d, %v; want 5", n, err)
		}
	})

	t.Run("match semantics", func(t *testing.T) {
		for _, c := range []struct {
			name string
			q    index.Query
			want func(ch chunk) bool
		}{
			{"all", index.Words(index.All, "brake", "pads"), func(ch chunk) bool { return hasAll(ch, "brake", "pads") }},
			{"all, apart", index.Words(index.All, "espresso", "turtles"), func(ch chunk) bool { return hasAll(ch, "espresso", "turtles") }},
			{"any", index.Words(index.Any, "espresso", "tomatoes"), func(ch chunk) bool { return hasAny(ch, "espresso", "tomatoes") }},
			{"at least 2 of 3", index.Query{Op: index.AtLeast, M: 2, Phrases: []index.Phrase{{"vendor"}, {"invoices"}, {"launch"}}},
				func(ch chunk) bool { return count(ch, "vendor", "invoices", "launch") >= 2 }},
			{"phrase", index.Query{Op: index.All, Phrases: []index.Phrase{{"brake", "pads"}}}, func(ch chunk) bool { return hasPhrase(ch, "brake", "pads") }},
			{"folded", index.Words(index.All, "cafe"), func(ch chunk) bool { return hasAll(ch, "cafe") }},
			{"stemmed", index.Words(index.All, "replacing"), func(ch chunk) bool { return hasAll(ch, "replacing") }},
		} {
			want := map[string]bool{}
			for _, ch := range chunks {
				if c.want(ch) {
					want[ch.hit.ID] = true
				}
			}
			if len(want) == 0 {
				t.Fatalf("%s: the fixture has no chunk for the query; the suite is broken", c.name)
			}
			for _, unranked := range []bool{false, true} {
				hs, err := b.Match(ctx, index.Match{Query: c.q, Unranked: unranked, Limit: 100})
				if err != nil {
					t.Fatalf("%s (unranked %v): %v", c.name, unranked, err)
				}
				got := map[string]bool{}
				for i, h := range hs {
					got[h.ID] = true
					if !unranked && i > 0 && h.Score > hs[i-1].Score {
						t.Errorf("%s: hit %d scores %v above hit %d's %v: ranked hits must be best first", c.name, i, h.Score, i-1, hs[i-1].Score)
					}
					if h.Snippet != "" {
						t.Errorf("%s: hit %s has a snippet: the engine cuts snippets, a backend makes none", c.name, h.ID)
					}
					if h.Text != chunkByID(chunks, h.ID).text {
						t.Errorf("%s: hit %s carries text %.40q, not its chunk's whole text", c.name, h.ID, h.Text)
					}
				}
				if !mapsEqual(got, want) {
					t.Errorf("%s (unranked %v): matched %v, want %v", c.name, unranked, keys(got), keys(want))
				}
			}
			ps, err := b.Postings(ctx, []index.Query{c.q}, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != len(want) {
				t.Errorf("%s: postings find %d chunks, want %d", c.name, len(ps), len(want))
			}
		}
	})

	t.Run("ranking prefers the chunk saying more", func(t *testing.T) {
		hs, err := b.Match(ctx, index.Match{Query: index.Words(index.Any, "budget", "travel"), Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) == 0 || !hasAll(chunkByID(chunks, hs[0].ID), "budget", "travel") {
			t.Errorf("first hit of budget|travel = %+v, want a chunk saying both", hs)
		}
	})

	t.Run("limit, skip and filters", func(t *testing.T) {
		q := index.Words(index.Any, "launch", "brake", "espresso", "turtles", "budget")
		all, err := b.Match(ctx, index.Match{Query: q, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) < 3 {
			t.Fatalf("%d hits for the broad query, want at least 3", len(all))
		}
		two, err := b.Match(ctx, index.Match{Query: q, Limit: 2})
		if err != nil || len(two) != 2 {
			t.Fatalf("Limit 2 gave %d hits, %v", len(two), err)
		}
		skip := map[string]bool{all[0].ID: true}
		rest, err := b.Match(ctx, index.Match{Query: q, Limit: 100, Skip: skip})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range rest {
			if skip[h.ID] {
				t.Errorf("skipped id %s returned", h.ID)
			}
		}
		if len(rest) != len(all)-1 {
			t.Errorf("Skip of one: %d hits, want %d", len(rest), len(all)-1)
		}
		from, to := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC).UnixMilli()
		in, err := b.Match(ctx, index.Match{Query: q, Filter: index.Filter{From: from, To: to}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(in) == 0 {
			t.Fatal("the time filter kept nothing of the February–March chat")
		}
		for _, h := range in {
			if h.TimestampMS >= to {
				t.Errorf("time filter [%d, %d): hit %s at %d", from, to, h.ID, h.TimestampMS)
			}
		}
		named, err := b.Match(ctx, index.Match{Query: q, Filter: index.Filter{Names: []string{"main street"}}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(named) != 1 || !hasPhrase(chunkByID(chunks, named[0].ID), "main", "street") {
			t.Errorf("name filter \"main street\": %d hits, want the one chunk saying it", len(named))
		}
		recent, err := b.Recent(ctx, index.Filter{}, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(recent) != 3 {
			t.Fatalf("Recent(3) gave %d", len(recent))
		}
		for i := range recent {
			if recent[i].Snippet != "" || recent[i].Text != chunkByID(chunks, recent[i].ID).text {
				t.Errorf("Recent returned %s with snippet %q and text %.40q; want no snippet and the chunk's whole text", recent[i].ID, recent[i].Snippet, recent[i].Text)
			}
		}
		for i := 1; i < len(recent); i++ {
			if recent[i].TimestampMS > recent[i-1].TimestampMS {
				t.Errorf("Recent is not newest first: %d after %d", recent[i].TimestampMS, recent[i-1].TimestampMS)
			}
		}
	})

	t.Run("newest by chunk time", func(t *testing.T) {
		// Unranked lists and recent chunks come newest first by chunk time, ties
		// by id, whatever order the chunks were written in: the fixture's last
		// sources are its oldest.
		byTime := func(hs []index.Hit) bool {
			for i := 1; i < len(hs); i++ {
				a, b := hs[i-1], hs[i]
				if b.TimestampMS > a.TimestampMS || b.TimestampMS == a.TimestampMS && b.ID < a.ID {
					return false
				}
			}
			return true
		}
		want := func(word string) []string {
			var cs []chunk
			for _, c := range chunks {
				if c.terms[analysis.Stem(word)] {
					cs = append(cs, c)
				}
			}
			sort.SliceStable(cs, func(i, j int) bool {
				if cs[i].hit.TimestampMS != cs[j].hit.TimestampMS {
					return cs[i].hit.TimestampMS > cs[j].hit.TimestampMS
				}
				return cs[i].hit.ID < cs[j].hit.ID
			})
			var ids []string
			for _, c := range cs {
				ids = append(ids, c.hit.ID)
			}
			return ids
		}
		for _, word := range []string{"turtles", "hibernated"} {
			all := want(word)
			if word == "hibernated" && len(all) != 2 {
				t.Fatalf("%d chunks say %q; the fixture has two, at the same time", len(all), word)
			}
			for _, limit := range []int{1, 2, len(all)} {
				hs, err := b.Match(ctx, index.Match{Query: index.Words(index.Any, word), Unranked: true, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, h := range hs {
					got = append(got, h.ID)
				}
				if !slices.Equal(got, all[:min(limit, len(all))]) || !byTime(hs) {
					t.Errorf("unranked %q, limit %d: %v; want the newest by chunk time, ties by id: %v", word, limit, got, all[:min(limit, len(all))])
				}
			}
		}
		recent, err := b.Recent(ctx, index.Filter{}, len(chunks), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(recent) != len(chunks) || !byTime(recent) {
			t.Errorf("Recent lists %d of %d chunks, newest first by chunk time and ties by id: %v", len(recent), len(chunks), byTime(recent))
		}
	})

	t.Run("documents by id and key", func(t *testing.T) {
		ids := []string{chunks[0].hit.ID, chunks[len(chunks)-1].hit.ID, "no-such-chunk"}
		texts, err := b.Texts(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(texts) != 2 {
			t.Errorf("Texts of two chunks and a missing id: %d texts, want 2", len(texts))
		}
		ps, err := b.Postings(ctx, []index.Query{index.Words(index.All, "turtles"), index.Words(index.All, "invoices")}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ks []index.Key
		byQuery := map[int]int{}
		for _, p := range ps {
			ks = append(ks, p.Key)
			byQuery[p.Query]++
		}
		if byQuery[0] == 0 || byQuery[1] == 0 {
			t.Fatalf("Postings of two queries tagged %v; want both", byQuery)
		}
		hs, err := b.Hits(ctx, ks)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			h, ok := hs[k]
			if !ok {
				t.Errorf("Hits lacks key %d the postings gave", k)
				continue
			}
			ch := chunkByID(chunks, h.ID)
			if !hasAny(ch, "turtles", "invoices") {
				t.Errorf("key %d reads chunk %s, which says neither word", k, h.ID)
			}
		}
		saying := 0
		for _, c := range chunks {
			if hasAny(c, "turtles") {
				saying++
			}
		}
		sample, err := b.Sample(ctx, index.Words(index.All, "turtles"), 5)
		if err != nil || len(sample) != saying || saying < 2 {
			t.Errorf("Sample(turtles) = %d texts, %v; want the %d chunks saying it", len(sample), err, saying)
		}
	})

	t.Run("people and entities", func(t *testing.T) {
		if _, ok := b.People("nobody at all"); ok {
			t.Error("People of a name the store never saw: ok")
		}
		got, err := b.KnownEntities(ctx, []string{"no-such-entity"})
		if err != nil || len(got) != 0 {
			t.Errorf("KnownEntities(unknown) = %v, %v", got, err)
		}
	})

	t.Run("following chunk", func(t *testing.T) {
		var chat []abi.ChunkHit
		for _, c := range chunks {
			if c.hit.SourceKind == abi.KindChat {
				chat = append(chat, c.hit)
			}
		}
		next, err := b.Following(ctx, chat)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, h := range chat {
			have[h.ID] = true
		}
		for _, n := range next {
			if have[n.ID] {
				t.Errorf("Following returned %s, already among the hits", n.ID)
			}
			if n.Snippet != "" || n.Text != chunkByID(chunks, n.ID).text {
				t.Errorf("Following returned %s with snippet %q and text %.40q; want no snippet and the chunk's whole text", n.ID, n.Snippet, n.Text)
			}
		}
	})

	t.Run("too broad", func(t *testing.T) {
		var ws []string
		for i := range 40 {
			ws = append(ws, fmt.Sprintf("w%d", i))
		}
		q := index.Words(index.AtLeast, ws...)
		q.M = 20
		if _, err := b.Match(ctx, index.Match{Query: q, Limit: 5}); err == nil {
			return // a backend may run it
		} else if !strings.Contains(err.Error(), index.ErrTooBroad.Error()) {
			t.Errorf("at least 20 of 40: %v; a backend that refuses says index.ErrTooBroad", err)
		}
	})
}

// readAll reads every chunk of the store: the postings of every fixture word,
// their hits and texts.
func readAll(t *testing.T, ctx context.Context, b index.Backend, srcs []Source) []chunk {
	t.Helper()
	words := fixtureWords(srcs)
	qs := make([]index.Query, len(words))
	for i, w := range words {
		qs[i] = index.Words(index.All, w)
	}
	ps, err := b.Postings(ctx, qs, 1000)
	if err != nil {
		t.Fatalf("Postings of every fixture word: %v", err)
	}
	keys := map[index.Key]bool{}
	for _, p := range ps {
		keys[p.Key] = true
	}
	var ks []index.Key
	for k := range keys {
		ks = append(ks, k)
	}
	hs, err := b.Hits(ctx, ks)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hs {
		ids = append(ids, h.ID)
	}
	texts, err := b.Texts(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	var out []chunk
	for _, h := range hs {
		tx, ok := texts[h.ID]
		if !ok {
			t.Fatalf("Texts lacks chunk %s that Hits read", h.ID)
		}
		if h.Text != tx.Text {
			t.Errorf("Hits gives chunk %s the text %.40q, Texts %.40q: a hit carries its chunk's whole text", h.ID, h.Text, tx.Text)
		}
		if h.Snippet != "" {
			t.Errorf("Hits gives chunk %s a snippet: the engine cuts snippets, a backend makes none", h.ID)
		}
		c := chunk{hit: h.ChunkHit, text: tx.Text, terms: map[string]bool{}, words: analysis.Words(tx.Text)}
		for _, w := range append(analysis.Words(tx.Title), c.words...) {
			c.terms[analysis.Stem(w)] = true
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].hit.TimestampMS < out[j].hit.TimestampMS })
	if len(out) < len(srcs) {
		t.Fatalf("read back %d chunks of %d sources", len(out), len(srcs))
	}
	return out
}

// fixtureWords are the distinct folded words of the fixture's titles and texts.
func fixtureWords(srcs []Source) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range srcs {
		for _, m := range s.Messages {
			for _, w := range append(analysis.Words(s.Title), analysis.Words(m.Text)...) {
				if !seen[w] {
					seen[w] = true
					out = append(out, w)
				}
			}
		}
	}
	return out
}

func hasAll(c chunk, ws ...string) bool { return count(c, ws...) == len(ws) }
func hasAny(c chunk, ws ...string) bool { return count(c, ws...) > 0 }

func count(c chunk, ws ...string) int {
	n := 0
	for _, w := range ws {
		if c.terms[analysis.Stem(w)] {
			n++
		}
	}
	return n
}

// hasPhrase reports whether c's text says ws adjacent, term by term.
func hasPhrase(c chunk, ws ...string) bool {
	for i := 0; i+len(ws) <= len(c.words); i++ {
		ok := true
		for j, w := range ws {
			if analysis.Stem(c.words[i+j]) != analysis.Stem(w) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func chunkByID(cs []chunk, id string) chunk {
	for _, c := range cs {
		if c.hit.ID == id {
			return c
		}
	}
	return chunk{terms: map[string]bool{}}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
