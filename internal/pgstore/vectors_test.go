package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/internal/wordvec/wordvectest"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// bowVector is a bag-of-words vector: each word hashed into one of dim
// dimensions, so that texts sharing words are near each other.
func bowVector(text string, dim int) []float32 {
	v := make([]float32, dim)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dim)]++
	}
	v[0] += 0.01 // never the zero vector
	return v
}

// embedServer answers POST /api/embed like Ollama with bowVector of each input,
// counting the texts it embedded.
func embedServer(t *testing.T, dim int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var texts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/embed" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		texts.Add(int64(len(req.Input)))
		out := struct {
			Model      string      `json:"model"`
			Embeddings [][]float32 `json:"embeddings"`
		}{Model: req.Model}
		for _, s := range req.Input {
			out.Embeddings = append(out.Embeddings, bowVector(s, dim))
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv, &texts
}

// cosine is the cosine similarity of a and b.
func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// TestVectorsOnPostgres: ingest's EmbedMissing embeds every chunk once (a second
// run embeds nothing, a re-ingested unchanged source keeps its vectors, a new
// model embeds every chunk again); recall's vector list ranks exactly the
// chunks a brute-force cosine ranking of their texts ranks first, under the
// embed gate; forgetting a source removes its vectors.
func TestVectorsOnPostgres(t *testing.T) {
	ctx := context.Background()
	const dim = 64
	srv, texts := embedServer(t, dim)
	emb := embed.NewOllama(srv.URL, "bow-64", 10*time.Second)
	pg := open(t)
	for _, in := range inputs() {
		if _, err := pg.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	st, err := pg.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := pg.EmbedMissing(ctx, emb)
	if err != nil {
		t.Fatal(err)
	}
	if n != st.TotalChunks || texts.Load() != int64(n) {
		t.Fatalf("EmbedMissing embedded %d (the server saw %d texts), want every chunk: %d", n, texts.Load(), st.TotalChunks)
	}
	if n, err := pg.EmbedMissing(ctx, emb); err != nil || n != 0 {
		t.Fatalf("a second EmbedMissing embedded %d (%v), want 0", n, err)
	}
	for _, in := range inputs() { // unchanged: the chunks and their vectors stay
		if _, err := pg.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := pg.EmbedMissing(ctx, emb); err != nil || n != 0 {
		t.Fatalf("EmbedMissing after re-ingesting unchanged sources embedded %d (%v), want 0", n, err)
	}
	if st, err = pg.Status(ctx); err != nil || st.Vectors["bow-64/64"] != st.TotalChunks {
		t.Fatalf("status vectors %v (%v), want bow-64/64: %d", st.Vectors, err, st.TotalChunks)
	}

	// Without an embedder the backend names none and lists nothing.
	b, err := pg.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vb := b.(index.Vectors)
	if m, ok := vb.VectorModel(); ok {
		t.Fatalf("VectorModel without an embedder: %q", m)
	}
	pg.SetEmbedder(emb)
	if m, ok := vb.VectorModel(); !ok || m != "bow-64" {
		t.Fatalf("VectorModel: %q %v, want bow-64", m, ok)
	}

	// The list is the brute-force cosine ranking of every chunk's text.
	b, err = pg.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := b.Recent(ctx, index.Filter{}, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, query := range []string{"phoenix launch date", "budget review", "garden tomatoes"} {
		qv := bowVector(query, dim)
		want := make([]index.Hit, len(all))
		copy(want, all)
		sort.SliceStable(want, func(i, j int) bool {
			si, sj := cosine(qv, bowVector(want[i].Text, dim)), cosine(qv, bowVector(want[j].Text, dim))
			if si != sj {
				return si > sj
			}
			return want[i].ID < want[j].ID
		})
		got, err := b.(index.Vectors).VectorList(ctx, query, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 5 {
			t.Fatalf("VectorList(%q, 5): %d hits", query, len(got))
		}
		for i, h := range got {
			if math.Abs(h.Score-cosine(qv, bowVector(h.Text, dim))) > 1e-5 {
				t.Errorf("VectorList(%q) hit %d %s: score %v, cosine %v", query, i, h.ID, h.Score, cosine(qv, bowVector(h.Text, dim)))
			}
			if math.Abs(h.Score-cosine(qv, bowVector(want[i].Text, dim))) > 1e-5 {
				t.Errorf("VectorList(%q) hit %d is %s (%.4f), the ranking has %s (%.4f)", query, i, h.ID, h.Score, want[i].ID, cosine(qv, bowVector(want[i].Text, dim)))
			}
			if h.SourceID == "" || h.Text == "" {
				t.Errorf("VectorList(%q) hit %d lacks its fields: %+v", query, i, h)
			}
		}
	}

	// The embed gate: a refused query is never sent.
	before := texts.Load()
	gated := index.WithEmbedGate(ctx, func(string) bool { return false })
	if _, err := b.(index.Vectors).VectorList(gated, "phoenix", 5); !errors.Is(err, index.ErrEmbedRefused) {
		t.Fatalf("VectorList under a refusing gate: %v, want ErrEmbedRefused", err)
	}
	if texts.Load() != before {
		t.Fatal("a query the gate refused was sent to the embedder")
	}

	// Another model embeds every chunk again, beside the first one's vectors.
	other := embed.NewOllama(srv.URL, "bow-64b", 10*time.Second)
	if n, err := pg.EmbedMissing(ctx, other); err != nil || n != st.TotalChunks {
		t.Fatalf("EmbedMissing with a new model embedded %d (%v), want %d", n, err, st.TotalChunks)
	}

	// Forget removes a source's vectors of every model.
	res, err := pg.Forget(ctx, memtree.ForgetFilter{SourceIDs: []string{"slack:#phoenix"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Chunks == 0 || res.Vectors != 2*res.Chunks {
		t.Fatalf("forget: %d chunks, %d vectors, want two vectors a chunk", res.Chunks, res.Vectors)
	}
	if st, err = pg.Status(ctx); err != nil || st.Vectors["bow-64/64"] != st.TotalChunks || st.Vectors["bow-64b/64"] != st.TotalChunks {
		t.Fatalf("status after forget: vectors %v (%v), want %d of each model", st.Vectors, err, st.TotalChunks)
	}
	b, err = pg.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.(index.Vectors).VectorList(ctx, "phoenix launch date", 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != st.TotalChunks {
		t.Errorf("VectorList after forget: %d hits, want every remaining chunk (%d)", len(got), st.TotalChunks)
	}
	for _, h := range got {
		if h.SourceID == "slack:#phoenix" {
			t.Errorf("VectorList after forget returned %s of the forgotten source", h.ID)
		}
	}
}

// TestVectorListUnderScope: a principal allowed doc:* gets documents only from
// the vector list, on both backends, while the same query unscoped ranks other
// sources' chunks first; and the scoped list still fills its depth from the
// documents (the scope picks the vectors ranked, it does not cut the list).
func TestVectorListUnderScope(t *testing.T) {
	ctx := context.Background()
	const dim = 64
	srv, _ := embedServer(t, dim)
	emb := embed.NewOllama(srv.URL, "bow-64", 10*time.Second)
	pg, lite := bothWith(t, inputs())
	scope, err := index.ParseScope([]string{"doc:*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		embed   func(context.Context, memtree.Embedder) (int, error)
		set     func(memtree.Embedder)
		reading func(context.Context) (index.Backend, error)
	}{
		{"PostgreSQL", pg.EmbedMissing, pg.SetEmbedder, pg.BeginRead},
		{"SQLite", lite.EmbedMissing, lite.SetEmbedder, lite.BeginRead},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.embed(ctx, emb); err != nil {
				t.Fatal(err)
			}
			c.set(emb)
			list := func(ctx context.Context, depth ...int) []index.Hit {
				t.Helper()
				b, err := c.reading(ctx)
				if err != nil {
					t.Fatal(err)
				}
				d := 50
				if len(depth) > 0 {
					d = depth[0]
				}
				hits, err := b.(index.Vectors).VectorList(ctx, "Q3 budget review vendor invoices travel", d)
				if err != nil {
					t.Fatal(err)
				}
				return hits
			}
			all := list(ctx)
			if len(all) == 0 || strings.HasPrefix(all[0].SourceID, "doc:") {
				t.Fatalf("unscoped, the query should rank another source first: %d hits, first %+v", len(all), all)
			}
			inScope := 0
			for _, h := range all {
				if strings.HasPrefix(h.SourceID, "doc:") {
					inScope++
				}
			}
			scoped := list(index.WithScope(ctx, scope))
			if len(scoped) == 0 || len(scoped) != inScope {
				t.Errorf("scoped to doc:*: %d hits, want every document chunk (%d)", len(scoped), inScope)
			}
			for _, h := range scoped {
				if !strings.HasPrefix(h.SourceID, "doc:") || h.SourceKind != abi.KindDocument {
					t.Errorf("scoped to doc:*, the vector list returned %s of %s (%s)", h.ID, h.SourceID, h.SourceKind)
				}
			}
			// A short list under the scope is as long as asked, though the
			// nearest vectors are another source's: the nearest documents, in order.
			if short := list(index.WithScope(ctx, scope), 2); len(short) != min(2, inScope) ||
				len(short) > 0 && short[0].ID != scoped[0].ID || len(short) > 1 && short[1].ID != scoped[1].ID {
				t.Errorf("scoped to doc:*, depth 2: %d hits %v, want the first two of %d", len(short), hitIDs(short), len(scoped))
			}
			// Unscoped again: the scoped call's vectors did not replace the whole set.
			if again := list(ctx); len(again) != len(all) {
				t.Errorf("unscoped after a scoped call: %d hits, want %d", len(again), len(all))
			}
		})
	}
}

func hitIDs(hs []index.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

// TestRecallEmbedderMeaningListOnPostgres: the embedder feeds recall's
// person-scoped meaning list on PostgreSQL as on SQLite (the same scenario,
// wordvectest.CheckMeaningList).
func TestRecallEmbedderMeaningListOnPostgres(t *testing.T) {
	wordvectest.CheckMeaningList(t, open(t))
}
