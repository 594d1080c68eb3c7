package memtree

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// leadFixture is a small memory for the recall-leads-with-search property: a chat
// between two people over several days, a mail thread and two notes.
func leadFixture(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	st := openTemp(t)
	lines := []string{
		"How long have you been married?", "Five years already! We met at a pottery class.",
		"That is lovely. I started painting sunsets by the lake last week.", "Sunsets are hard to paint, the colours change so fast.",
		"I also joined a book club, we read a mystery novel each month.", "Which novel are you reading now?",
		"A detective story set in Lisbon, with trams and old harbours.", "I went to Lisbon in April with my sister.",
		"Did you go hiking there?", "No, but we hiked in the mountains near Porto.",
		"My dog Max loves long walks in the forest.", "Max is such a good boy, how old is he now?",
		"He turns four in June; we adopted him from a shelter.", "Shelters do great work, I volunteer at one on Saturdays.",
		"What made you start volunteering?", "After my grandmother passed, I wanted to help others.",
		"I am sorry about your grandmother.", "Thanks, she taught me how to bake bread and knit scarves.",
		"I tried baking bread yesterday and it came out flat.", "Use more yeast and let the dough rise longer.",
		"Our team won the charity run on Sunday!", "Congratulations, how far was the run?",
		"Ten kilometres along the river.", "I should start running again, my knee is better now.",
		"Careful with the knee, maybe try swimming first.", "Good idea, the pool near my office opens early.",
	}
	var msgs []MessageInput
	day := int64(1767261600000) // 2026-01-01 10:00 UTC
	for i, l := range lines {
		who := []string{"Ana Lopes", "Ben Carter"}[i%2]
		msgs = append(msgs, MessageInput{Ref: fmt.Sprintf("chat:%d", i+1), Author: who,
			TimestampMS: day + int64(i/6)*86_400_000 + int64(i%6)*60_000, Text: l})
	}
	doc := func(name, text string) SourceInput {
		return SourceInput{Kind: KindDocument, SourceID: "doc:" + name, Title: name,
			Messages: []MessageInput{{Ref: "docs/" + name, TimestampMS: day, Text: text}}}
	}
	// Notes in made-up words give the store a vocabulary of some 2,400 words, so a
	// query word it never says counts against the query's literal evidence (see
	// lexicalLists) and partial evidence is exercised too.
	syl := []string{"ka", "lo", "mi", "ru", "te", "sa", "po", "ne", "vi", "du", "ba", "ge"}
	prng := rand.New(rand.NewPCG(7, 7))
	var notes []SourceInput
	for d := range 60 {
		var ws []string
		for range 40 {
			w := ""
			for range 3 + prng.IntN(2) {
				w += syl[prng.IntN(len(syl))]
			}
			ws = append(ws, w)
		}
		notes = append(notes, doc(fmt.Sprintf("note-%d.md", d), strings.Join(ws, " ")+"."))
	}
	for _, src := range append([]SourceInput{
		{Kind: KindChat, SourceID: "chat:ana-ben", Title: "Ana and Ben", Messages: msgs},
		{Kind: KindEmail, SourceID: "email:quote", Title: "Brake repair quote", Messages: []MessageInput{
			{Ref: "mail-1", Author: "Ana Lopes", AuthorAddr: "ana@example.org", Subject: "Brake repair quote", TimestampMS: day + 3600_000,
				Text: "The car makes a grinding noise when braking. Could you send a quote for new brake pads?"},
			{Ref: "mail-2", Author: "Garage", AuthorAddr: "shop@garage.example", Subject: "Re: Brake repair quote", TimestampMS: day + 7200_000,
				Text: "Pads and rotors come to 420 EUR including labour."},
		}},
		doc("bread.md", "Bread recipe: flour, water, yeast, salt. Let the dough rise for two hours before baking."),
		doc("lisbon.md", "Lisbon trip: hotel near Alfama, tram 28, the Belem tower and the harbour at sunset."),
	}, notes...) {
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// refsIn lists the cited refs of hits in order (a hit's SourceRefs, or its
// SourceRef), as a client walks them.
func refsIn(hits []abi.ChunkHit) []string {
	var out []string
	for _, h := range hits {
		if len(h.SourceRefs) > 0 {
			out = append(out, h.SourceRefs...)
		} else if h.SourceRef != "" {
			out = append(out, h.SourceRef)
		}
	}
	return out
}

// firstDistinct returns the first n distinct refs of refs.
func firstDistinct(refs []string, n int) map[string]bool {
	out := map[string]bool{}
	for _, r := range refs {
		if len(out) == n {
			break
		}
		out[r] = true
	}
	return out
}

// toyOllama answers POST /api/embed like Ollama with hashed bag-of-words vectors.
func toyOllama(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := struct {
			Model      string      `json:"model"`
			Embeddings [][]float32 `json:"embeddings"`
		}{Model: req.Model}
		for _, s := range req.Input {
			v := make([]float32, 48)
			for _, w := range words(s) {
				h := fnv.New32a()
				h.Write([]byte(w))
				v[h.Sum32()%48]++
			}
			out.Embeddings = append(out.Embeddings, v)
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRecallLeadsWithSearch is the property behind issue 16's "recall is never
// worse than search": for random queries and k, recall's hits begin with exactly
// search's hits (same chunks, same cited refs, same order) as far as its literal
// evidence reaches: search's whole list under full literal evidence, a share of the
// hits that say the query's rarer words under partial evidence; so for every n up to
// the refs those hits cite, recall's first n cited refs contain search's first n.
// Checked offline and with a dense embedder (hybrid fusion follows the same rule).
func TestRecallLeadsWithSearch(t *testing.T) {
	ctx := context.Background()
	st := leadFixture(t)
	db, err := st.readers(ctx)
	if err != nil || db == nil {
		t.Fatalf("readers: %v", err)
	}
	// The vocabulary queries are drawn from: the store's words, question words,
	// names, and words the store never says.
	var vocab []string
	rows, err := db.QueryContext(ctx, `SELECT term FROM chunks_fts_vocab`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var w string
		if err := rows.Scan(&w); err != nil {
			t.Fatal(err)
		}
		vocab = append(vocab, w)
	}
	rows.Close()
	vocab = append(vocab, "what", "when", "did", "how", "Ana", "Ben", "spouse", "automobile", "novel", "holiday", "canine", "January 2026")
	// Words of the chat and the mail more often than the made-up ones.
	for _, l := range []string{"married pottery painting sunsets lake book club mystery novel Lisbon hiking mountains",
		"dog Max walks forest shelter volunteer grandmother bread yeast dough charity run river knee swimming",
		"brake pads quote grinding noise rotors labour spouse wedding canine puppy baking jogging photograph"} {
		for range 8 {
			vocab = append(vocab, strings.Fields(l)...)
		}
	}
	rng := rand.New(rand.NewPCG(16, 2026))
	check := func(t *testing.T, mode string, n int) {
		leadSeen, fullSeen, partSeen := 0, 0, 0
		for range n {
			nw := 1 + rng.IntN(4)
			var q []string
			for range nw {
				q = append(q, vocab[rng.IntN(len(vocab))])
			}
			query := strings.Join(q, " ")
			if rng.IntN(3) == 0 {
				query = "What did " + query + "?"
			}
			k := 1 + rng.IntN(20)
			sr, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: query, K: k})
			if err != nil {
				t.Fatalf("search %q: %v", query, err)
			}
			rc, err := memory.Default(st).Recall(ctx, abi.RecallRequest{Query: query, K: k})
			if err != nil {
				t.Fatalf("recall %q: %v", query, err)
			}
			b, err := st.BeginRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			eng := retrieval.New(retrieval.DefaultParams())
			hits, level, err := eng.Search(ctx, b, query, k)
			if err != nil {
				t.Fatal(err)
			}
			prefix, _ := retrieval.LiteralLead(hits, level)
			lead, _, _, _, rho, err := eng.LexicalLists(ctx, b, query, k)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case rho >= 1:
				// Full literal evidence: search's whole list leads.
				if len(lead) != len(hits) {
					t.Fatalf("%s %q k=%d: full evidence, lead of %d hits, search has %d", mode, query, k, len(lead), len(hits))
				}
				fullSeen++
			case len(lead) > len(prefix):
				t.Fatalf("%s %q k=%d: lead of %d hits, longer than search's literal prefix (%d)", mode, query, k, len(lead), len(prefix))
			case len(lead) > 0:
				partSeen++
			}
			if len(lead) > 0 {
				leadSeen++
			}
			if len(rc.Chunks) < len(lead) {
				t.Fatalf("%s %q k=%d: recall returned %d hits, search's literal lead has %d", mode, query, k, len(rc.Chunks), len(lead))
			}
			for i := range lead {
				s, r := sr.Chunks[i], rc.Chunks[i]
				if s.ID != r.ID || s.SourceRef != r.SourceRef || !slices.Equal(s.SourceRefs, r.SourceRefs) {
					t.Fatalf("%s %q k=%d: hit %d: recall %s cites %v, search %s cites %v (rho %.2f, lead %d)",
						mode, query, k, i, r.ID, r.SourceRefs, s.ID, s.SourceRefs, rho, len(lead))
				}
			}
			srefs, rrefs := refsIn(sr.Chunks), refsIn(rc.Chunks)
			for n := 1; n <= len(refsIn(lead)); n++ {
				want, got := firstDistinct(srefs, n), firstDistinct(rrefs, n)
				for r := range want {
					if !got[r] {
						t.Fatalf("%s %q k=%d: search's first %d refs hold %s, recall's do not (search %v, recall %v)", mode, query, k, n, r, srefs, rrefs)
					}
				}
			}
		}
		// The property must have been exercised, with and without full evidence.
		if leadSeen < n/2 || fullSeen == 0 || partSeen == 0 {
			t.Fatalf("%s: %d of %d queries had a literal lead, %d full evidence, %d partial: the queries do not exercise the property", mode, leadSeen, n, fullSeen, partSeen)
		}
		t.Logf("%s: %d of %d queries with a literal lead; %d with full evidence, %d with partial", mode, leadSeen, n, fullSeen, partSeen)
	}
	check(t, "offline", 300)
	emb := embed.NewOllama(toyOllama(t).URL, "toy-bag", 5*time.Second)
	if _, err := st.EmbedMissing(ctx, emb); err != nil {
		t.Fatal(err)
	}
	st.SetEmbedder(emb)
	check(t, "hybrid", 150)
}
