package memtree_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/config"
	"github.com/openhuman/openhuman-core/internal/embed"
	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// sharedDir locates ../shared relative to the repository root, or the directory
// OPENHUMAN_SHARED names (a worktree checked out elsewhere).
func sharedDir() string {
	if d := os.Getenv("OPENHUMAN_SHARED"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared")
}

// sharedData locates the shared data directory (see sharedDir).
func sharedData(t testing.TB) string {
	return filepath.Join(sharedDir(), "data")
}

// genCorpus runs the corpus generator into dir with extra flags.
func genCorpus(t testing.TB, dir string, flags ...string) {
	t.Helper()
	gen := filepath.Join(sharedData(t), "gencorpus")
	args := append([]string{"run", "-C", gen, ".", "-out", dir}, flags...)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gencorpus %v: %v\n%s", flags, err, out)
	}
}

type evalQuery struct {
	ID       string   `json:"id"`
	Kind     string   `json:"kind"`
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
}

func loadQueries(t testing.TB, path string) []evalQuery {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []evalQuery
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var q evalQuery
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatalf("queries.jsonl: %v", err)
		}
		qs = append(qs, q)
	}
	return qs
}

// score is the README's scorer: recall@k and reciprocal rank of deduplicated refs.
func score(relevant, got []string, k int) (recall, rr float64) {
	rel := map[string]bool{}
	for _, r := range relevant {
		rel[r] = true
	}
	seen, hits, rank := map[string]bool{}, 0, 0
	for _, g := range got {
		if seen[g] {
			continue
		}
		seen[g] = true
		rank++
		if rel[g] {
			if rank <= k {
				hits++
			}
			if rr == 0 && rank <= k {
				rr = 1 / float64(rank)
			}
		}
	}
	return float64(hits) / float64(len(relevant)), rr
}

var (
	corpusOnce  sync.Once
	corpusStore string
	corpusDir   string
	corpusErr   error
	keepStore   bool
)

// corpusFixture generates the default corpus and ingests it once per test binary.
func corpusFixture(t *testing.T) (string, string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sharedData(t), "gencorpus", "main.go")); err != nil {
		t.Skipf("shared corpus generator not present at %s: corpus quality checks not run", sharedData(t))
	}
	corpusOnce.Do(func() {
		// MEMTREE_QUALITY_KEEP=DIR reuses (or builds once) the corpus and store in DIR,
		// for fast iteration; delete DIR after changing chunking or ingest.
		if keep := os.Getenv("MEMTREE_QUALITY_KEEP"); keep != "" {
			corpusDir = filepath.Join(keep, "corpus")
			if _, err := os.Stat(filepath.Join(keep, "store", "chunks.db")); err == nil {
				corpusStore = filepath.Join(keep, "store", "chunks.db")
				keepStore = true
				return
			}
			keepStore = true
		}
		base := os.Getenv("MEMTREE_QUALITY_KEEP")
		if !keepStore {
			var err error
			if base, err = os.MkdirTemp("", "memtree-quality-"); err != nil {
				corpusErr = err
				return
			}
		}
		corpusDir = filepath.Join(base, "corpus")
		// MEMTREE_QUALITY_SEED=N generates the corpus with another seed: the same
		// generator, other people, texts and queries — the data a knob chosen on
		// seed 1 is scored on held out (internal/retrieval/RATIONALE.md).
		var flags []string
		if seed := os.Getenv("MEMTREE_QUALITY_SEED"); seed != "" {
			flags = append(flags, "-seed", seed)
		}
		genCorpus(t, corpusDir, flags...)
		corpusStore = filepath.Join(base, "store", "chunks.db")
		st, err := memtree.Open(corpusStore)
		if err != nil {
			corpusErr = err
			return
		}
		defer st.Close()
		sum, err := ingest.Run(context.Background(), st, []string{corpusDir}, ingest.Options{})
		if err != nil {
			corpusErr = err
			return
		}
		t.Logf("ingest: %s", sum.Line())
	})
	if corpusErr != nil {
		t.Fatalf("build corpus store: %v", corpusErr)
	}
	paraphraseOnce.Do(func() {
		// As `openhuman-core ingest` does: the bilingual paraphrase table, when
		// Debian's FreeDict English-German dictionaries are installed (.ci/run
		// installs them). A kept store is rebuilt only when the files changed.
		st, err := memtree.Open(corpusStore)
		if err != nil {
			corpusErr = err
			return
		}
		defer st.Close()
		res, err := ingest.Paraphrases(context.Background(), st, pivotDictionaries())
		if err != nil {
			corpusErr = err
			return
		}
		paraphrases = len(res.Dictionaries) > 0
	})
	if corpusErr != nil {
		t.Fatalf("build the paraphrase table: %v", corpusErr)
	}
	return corpusDir, corpusStore
}

// pivotDictionaries are the dictionaries the corpus store's paraphrase table is
// built from: the default, or MEMTREE_QUALITY_PIVOT (comma-separated dictd paths)
// to score others.
func pivotDictionaries() []string {
	if v := os.Getenv("MEMTREE_QUALITY_PIVOT"); v != "" {
		return strings.Split(v, ",")
	}
	return config.DefaultPivotDictionaries
}

var (
	paraphraseOnce sync.Once
	// paraphrases is whether the corpus store has a bilingual paraphrase table.
	paraphrases bool
)

func TestMain(m *testing.M) {
	if os.Getenv(crashEnv) != "" {
		crashChild()
		return
	}
	if err := setParamsFromEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	if corpusStore != "" && !keepStore {
		os.RemoveAll(filepath.Dir(filepath.Dir(corpusStore)))
	}
	os.Exit(code)
}

func expandRefs(hits []abi.ChunkHit) []string {
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

// dumpHits writes hits as one line of JSON (every field, scores included).
func dumpHits(w *os.File, hits []abi.ChunkHit) {
	b, err := json.Marshal(hits)
	if err != nil {
		fmt.Fprintf(w, "\terror: %v\n", err)
		return
	}
	fmt.Fprintf(w, "\t%s\n", b)
}

type kindScore struct {
	n        int
	rec, mrr float64
}

func TestQualityOnCorpus(t *testing.T) {
	dir, path := corpusFixture(t)
	st, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	qs := loadQueries(t, filepath.Join(dir, "eval", "queries.jsonl"))
	if len(qs) < 100 {
		t.Fatalf("only %d queries", len(qs))
	}
	search := map[string]*kindScore{}
	recall := map[string]*kindScore{}
	add := func(m map[string]*kindScore, kind string, r, rr float64) {
		if m[kind] == nil {
			m[kind] = &kindScore{}
		}
		m[kind].n++
		m[kind].rec += r
		m[kind].mrr += rr
	}
	verbose := os.Getenv("MEMTREE_QUALITY_VERBOSE") != ""
	// MEMTREE_QUALITY_EMBED_ENDPOINT (+ _MODEL) scores recall with a dense embedder
	// behind an OpenAI-compatible endpoint instead of the offline default: the store
	// is embedded first (use MEMTREE_QUALITY_KEEP to keep the vectors). The targets
	// are the offline default's, so they are then reported, not checked.
	wantModes := map[string]bool{abi.ModeLexical: true}
	embedded := ""
	if ep := os.Getenv("MEMTREE_QUALITY_EMBED_ENDPOINT"); ep != "" {
		emb := embed.NewOpenAI(ep, os.Getenv("MEMTREE_QUALITY_EMBED_MODEL"), "", 10*time.Minute)
		w, err := memtree.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		n, err := w.EmbedMissing(ctx, emb)
		w.Close()
		if err != nil {
			t.Fatalf("embed the corpus store: %v", err)
		}
		t.Logf("embedded %d chunks and summaries with %s in %.1f s", n, emb.Model(), time.Since(start).Seconds())
		st.SetEmbedder(emb)
		wantModes = map[string]bool{abi.ModeHybrid: true, abi.ModeSemantic: true}
		embedded = emb.Model()
	}
	// MEMTREE_QUALITY_HITS=FILE writes every query's hit ids and cited refs, one
	// line per query and tool, followed by the hits in full as JSON, so two
	// versions' results can be compared byte for byte.
	var dump *os.File
	if p := os.Getenv("MEMTREE_QUALITY_HITS"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		dump = f
	}
	for _, q := range qs {
		sr, err := evalAPI(st).Search(ctx, abi.SearchRequest{Query: q.Query, K: 10})
		if err != nil {
			t.Fatalf("Search %q: %v", q.Query, err)
		}
		r, rr := score(q.Relevant, expandRefs(sr.Chunks), 10)
		add(search, q.Kind, r, rr)
		rc, err := evalAPI(st).Recall(ctx, abi.RecallRequest{Query: q.Query, K: 10})
		if err != nil {
			t.Fatalf("Recall %q: %v", q.Query, err)
		}
		if !wantModes[rc.Mode] {
			t.Errorf("Recall mode = %q (note %q), want one of %v", rc.Mode, rc.Note, wantModes)
		}
		r2, rr2 := score(q.Relevant, expandRefs(rc.Chunks), 10)
		if dump != nil {
			for _, x := range []struct {
				tool string
				hs   []abi.ChunkHit
			}{{"search", sr.Chunks}, {"recall", rc.Chunks}} {
				fmt.Fprintf(dump, "%s\t%s", q.ID, x.tool)
				for _, h := range x.hs {
					fmt.Fprintf(dump, "\t%s:%s", h.ID, strings.Join(expandRefs([]abi.ChunkHit{h}), ","))
				}
				fmt.Fprintln(dump)
				dumpHits(dump, x.hs)
			}
		}
		add(recall, q.Kind, r2, rr2)
		if verbose {
			t.Logf("%s %-10s search r=%.2f recall r=%.2f rr=%.2f rr2=%.2f %q %v", q.ID, q.Kind, r, r2, rr, rr2, q.Query, head(expandRefs(sr.Chunks), 6))
		}
	}
	kinds := []string{}
	for k := range search {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-11s %4s | %-17s | %-17s\n", "kind", "n", "Search R@10  MRR", "Recall R@10  MRR")
	for _, k := range kinds {
		s, r := search[k], recall[k]
		fmt.Fprintf(&b, "%-11s %4d | %6.3f   %6.3f | %6.3f   %6.3f\n", k, s.n, s.rec/float64(s.n), s.mrr/float64(s.n), r.rec/float64(r.n), r.mrr/float64(r.n))
	}
	t.Log(b.String())
	if embedded != "" {
		t.Logf("recall scored with the dense embedder %s (hybrid mode); the offline targets are not checked in this mode", embedded)
		return
	}
	// Without translating dictionaries recall expands with WordNet alone (0.215 on
	// this corpus); with them, with the bilingual paraphrases too (0.229).
	paraphraseFloor := 0.2
	if paraphrases {
		paraphraseFloor = 0.22
		t.Logf("recall expands with WordNet and the paraphrases pivoted through %s", strings.Join(pivotDictionaries(), " and "))
	} else {
		t.Logf("no FreeDict English-German dictionary at %s: recall expands with WordNet alone (apt-get install dict-freedict-eng-deu dict-freedict-deu-eng to score the paraphrase table too)", strings.Join(config.DefaultPivotDictionaries, " and "))
	}
	// Each check has the target and the floor this suite enforces. Where the
	// floor is below the target, the target is not met yet: the gap is logged and the
	// floor guards against regression.
	want := []struct {
		m      map[string]*kindScore
		name   string
		kind   string
		target float64
		floor  float64
	}{
		{search, "Search", "keyword", 0.9, 0.9},
		{search, "Search", "entity", 0.75, 0.75},
		{search, "Search", "temporal", 0.75, 0.75},
		{recall, "Recall", "keyword", 0.85, 0.9},
		{recall, "Recall", "paraphrase", 0.3, paraphraseFloor},
		{recall, "Recall", "related", 0.4, 0.4},
	}
	for _, w := range want {
		s := w.m[w.kind]
		if s == nil || s.n == 0 {
			t.Errorf("%s: no %s queries in the corpus", w.name, w.kind)
			continue
		}
		got := s.rec / float64(s.n)
		if got < w.floor {
			t.Errorf("%s recall@10 on %s queries = %.3f, want >= %.2f (target %.2f)", w.name, w.kind, got, w.floor, w.target)
		}
		if got < w.target {
			t.Logf("TARGET NOT MET: %s recall@10 on %s queries = %.3f, target %.2f (gap %.3f); regression floor %.2f",
				w.name, w.kind, got, w.target, w.target-got, w.floor)
		}
	}
}
