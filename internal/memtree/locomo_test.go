package memtree_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// The LoCoMo evaluation (issue 16): conversations of the LoCoMo benchmark
// (../shared/locomo, see its README) ingested one store per conversation through the
// chat-batch reader, every question of categories 1–4 asked with k = 50, and the
// evidence turns scored as recall@k over the cited message refs (hits in rank
// order, within a hit its SourceRefs in order, first occurrences). A plain Okapi
// BM25 over "speaker: text" turns is computed on the same turns as the baseline.
// MEMTREE_LOCOMO_MD=FILE writes the table as markdown.

// locomoDir locates the shared LoCoMo conversations (see sharedDir).
func locomoDir() string {
	return filepath.Join(sharedDir(), "locomo")
}

type locomoTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	Caption string `json:"blip_caption"`
}

type locomoQA struct {
	Question string          `json:"question"`
	Evidence []string        `json:"evidence"`
	Category int             `json:"category"`
	Answer   json.RawMessage `json:"answer"`
}

type locomoConv struct {
	id       string
	turns    []locomoTurn // in session order
	times    []time.Time  // aligned with turns: the session's date-time
	qa       []locomoQA
	speakers [2]string
}

// loadLocomo reads one <conv>.json.
func loadLocomo(path string) (*locomoConv, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &locomoConv{id: strings.TrimSuffix(filepath.Base(path), ".json")}
	json.Unmarshal(raw["speaker_a"], &c.speakers[0])
	json.Unmarshal(raw["speaker_b"], &c.speakers[1])
	if err := json.Unmarshal(raw["qa"], &c.qa); err != nil {
		return nil, fmt.Errorf("%s: qa: %w", path, err)
	}
	for n := 1; ; n++ {
		sess, ok := raw[fmt.Sprintf("session_%d", n)]
		if !ok {
			if _, more := raw[fmt.Sprintf("session_%d", n+1)]; more {
				continue
			}
			break
		}
		var dt string
		json.Unmarshal(raw[fmt.Sprintf("session_%d_date_time", n)], &dt)
		when, err := time.Parse("3:04 pm on 2 January, 2006", strings.TrimSpace(dt))
		if err != nil {
			return nil, fmt.Errorf("%s: session %d date %q: %w", path, n, dt, err)
		}
		var turns []locomoTurn
		if err := json.Unmarshal(sess, &turns); err != nil {
			return nil, fmt.Errorf("%s: session %d: %w", path, n, err)
		}
		for _, t := range turns {
			c.turns = append(c.turns, t)
			c.times = append(c.times, when)
		}
	}
	return c, nil
}

func (t locomoTurn) message() string {
	if t.Caption != "" {
		return t.Text + " [shares a photo: " + t.Caption + "]"
	}
	return t.Text
}

var reEvidence = regexp.MustCompile(`D:?(\d+):(\d+)`)

// evidence normalises a question's evidence ids ("D8:6; D9:17", "D:11:26", "D30:05")
// into refs of the conversation, dropping ids it does not hold.
func (c *locomoConv) evidence(q locomoQA, known map[string]bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range q.Evidence {
		for _, m := range reEvidence.FindAllStringSubmatch(e, -1) {
			s, _ := strconv.Atoi(m[1])
			n, _ := strconv.Atoi(m[2])
			ref := fmt.Sprintf("%s:D%d:%d", c.id, s, n)
			if known[ref] && !seen[ref] {
				seen[ref] = true
				out = append(out, ref)
			}
		}
	}
	return out
}

func (c *locomoConv) ref(i int) string { return c.id + ":" + c.turns[i].DiaID }

// buildLocomoStore writes the conversation as a chat batch and ingests it.
func buildLocomoStore(t testing.TB, c *locomoConv, dir string) *memtree.Store {
	t.Helper()
	in := writeLocomoBatch(t, c, dir)
	path := filepath.Join(dir, "store", "chunks.db")
	st, err := memtree.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := ingest.Run(context.Background(), st, []string{in}, ingest.Options{})
	st.Close()
	if err != nil {
		t.Fatalf("ingest conversation %s: %v", c.id, err)
	}
	if sum.Failures > 0 {
		t.Fatalf("ingest conversation %s: %s", c.id, sum.Line())
	}
	ro, err := memtree.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	return ro
}

// writeLocomoBatch writes the conversation as a chat batch file in dir.
func writeLocomoBatch(t testing.TB, c *locomoConv, dir string) string {
	t.Helper()
	type msg struct {
		Author    string `json:"author"`
		Timestamp string `json:"timestamp"`
		Text      string `json:"text"`
		SourceRef string `json:"source_ref"`
	}
	batch := struct {
		Platform     string `json:"platform"`
		ChannelLabel string `json:"channel_label"`
		Messages     []msg  `json:"messages"`
	}{Platform: "locomo", ChannelLabel: "conversation " + c.id}
	for i, tu := range c.turns {
		batch.Messages = append(batch.Messages, msg{Author: tu.Speaker, Timestamp: c.times[i].Format(time.RFC3339),
			Text: tu.message(), SourceRef: c.ref(i)})
	}
	b, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in", c.id+".json")
	if err := os.MkdirAll(filepath.Dir(in), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return in
}

// bm25Turns is plain Okapi BM25 (k1 1.2, b 0.75) over "speaker: text" turns:
// lowercase letter/digit tokens, no stemming, no stopwords.
type bm25Turns struct {
	docs  []map[string]int
	lens  []float64
	avg   float64
	df    map[string]int
	order []string // refs aligned with docs
}

func bm25Tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

func newBM25Turns(c *locomoConv) *bm25Turns {
	b := &bm25Turns{df: map[string]int{}}
	total := 0.0
	for i, tu := range c.turns {
		tf := map[string]int{}
		toks := bm25Tokens(tu.Speaker + ": " + tu.message())
		for _, w := range toks {
			tf[w]++
		}
		for w := range tf {
			b.df[w]++
		}
		b.docs = append(b.docs, tf)
		b.lens = append(b.lens, float64(len(toks)))
		b.order = append(b.order, c.ref(i))
		total += float64(len(toks))
	}
	b.avg = total / float64(len(b.docs))
	return b
}

func (b *bm25Turns) rank(q string, k int) []string {
	const k1, bb = 1.2, 0.75
	n := float64(len(b.docs))
	qs := map[string]bool{}
	for _, w := range bm25Tokens(q) {
		qs[w] = true
	}
	type sc struct {
		i int
		s float64
	}
	var out []sc
	for i, d := range b.docs {
		s := 0.0
		for w := range qs {
			f := float64(d[w])
			if f == 0 {
				continue
			}
			df := float64(b.df[w])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			s += idf * f * (k1 + 1) / (f + k1*(1-bb+bb*b.lens[i]/b.avg))
		}
		if s > 0 {
			out = append(out, sc{i, s})
		}
	}
	sort.SliceStable(out, func(x, y int) bool { return out[x].s > out[y].s })
	var refs []string
	for _, o := range out {
		if len(refs) == k {
			break
		}
		refs = append(refs, b.order[o.i])
	}
	return refs
}

// locomoKs are the cut-offs of the table.
var locomoKs = []int{5, 10, 25, 50}

// recallAt is the README's metric: first occurrences of refs in order, recall@k.
func recallAt(evidence, refs []string, k int) float64 {
	want := map[string]bool{}
	for _, e := range evidence {
		want[e] = true
	}
	seen := map[string]bool{}
	n, got := 0, 0
	for _, r := range refs {
		if seen[r] {
			continue
		}
		seen[r] = true
		n++
		if n > k {
			break
		}
		if want[r] {
			got++
		}
	}
	return float64(got) / float64(len(evidence))
}

// locomoScore accumulates recall@k per category (0 = overall).
type locomoScore struct {
	n   map[int]int
	sum map[int][]float64
}

func newLocomoScore() *locomoScore { return &locomoScore{n: map[int]int{}, sum: map[int][]float64{}} }

func (s *locomoScore) add(cat int, evidence, refs []string) {
	for _, c := range []int{0, cat} {
		if s.sum[c] == nil {
			s.sum[c] = make([]float64, len(locomoKs))
		}
		s.n[c]++
		for i, k := range locomoKs {
			s.sum[c][i] += recallAt(evidence, refs, k)
		}
	}
}

// at returns recall@locomoKs[i] of category cat in percent.
func (s *locomoScore) at(cat, i int) float64 {
	if s.n[cat] == 0 {
		return 0
	}
	return 100 * s.sum[cat][i] / float64(s.n[cat])
}

// locomoResult is the evaluation of every system on the conversations present.
type locomoResult struct {
	systems []string
	scores  map[string]*locomoScore
	convs   []string
	perConv map[string]map[string]*locomoScore // conversation → system → scores
	skipped int                                // questions whose evidence names no turn of the conversation
}

// runLocomo builds the stores and scores BM25, search and recall.
func runLocomo(t *testing.T) *locomoResult {
	return runLocomoOn(t, func(t *testing.T, c *locomoConv) (memory.Store, func()) {
		st := buildLocomoStore(t, c, t.TempDir())
		return st, func() { st.Close() }
	})
}

// runLocomoOn is runLocomo over the stores build makes, one per conversation
// (closed by the function it returns).
func runLocomoOn(t *testing.T, build func(t *testing.T, c *locomoConv) (memory.Store, func())) *locomoResult {
	dir := locomoDir()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) == 0 {
		t.Skipf("LoCoMo conversations not present at %s: the LoCoMo evaluation is not run", dir)
	}
	sort.Strings(files)
	ctx := context.Background()
	res := &locomoResult{systems: []string{"BM25", "search", "recall"}, scores: map[string]*locomoScore{}, perConv: map[string]map[string]*locomoScore{}}
	for _, s := range res.systems {
		res.scores[s] = newLocomoScore()
	}
	verbose := os.Getenv("MEMTREE_LOCOMO_VERBOSE") != ""
	// MEMTREE_LOCOMO_HITS=FILE writes every question's hit ids and cited refs, one
	// line per question and tool, followed by the hits in full as JSON (scores,
	// snippets, messages), so two versions' results can be compared byte for byte.
	var dump *os.File
	if p := os.Getenv("MEMTREE_LOCOMO_HITS"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		dump = f
	}
	for _, f := range files {
		c, err := loadLocomo(f)
		if err != nil {
			t.Fatal(err)
		}
		res.convs = append(res.convs, c.id)
		per := map[string]*locomoScore{}
		for _, s := range res.systems {
			per[s] = newLocomoScore()
		}
		res.perConv[c.id] = per
		st, closeStore := build(t, c)
		known := map[string]bool{}
		for i := range c.turns {
			known[c.ref(i)] = true
		}
		bm := newBM25Turns(c)
		for _, q := range c.qa {
			if q.Category < 1 || q.Category > 4 {
				continue
			}
			ev := c.evidence(q, known)
			if len(ev) == 0 {
				res.skipped++
				continue
			}
			bmRefs := bm.rank(q.Question, 50)
			res.scores["BM25"].add(q.Category, ev, bmRefs)
			per["BM25"].add(q.Category, ev, bmRefs)
			sr, err := evalAPI(st).Search(ctx, abi.SearchRequest{Query: q.Question, K: 50})
			if err != nil {
				t.Fatalf("Search %q: %v", q.Question, err)
			}
			srefs := expandRefs(sr.Chunks)
			res.scores["search"].add(q.Category, ev, srefs)
			per["search"].add(q.Category, ev, srefs)
			rc, err := evalAPI(st).Recall(ctx, abi.RecallRequest{Query: q.Question, K: 50})
			if err != nil {
				t.Fatalf("Recall %q: %v", q.Question, err)
			}
			rrefs := expandRefs(rc.Chunks)
			if dump != nil {
				for _, x := range []struct {
					tool string
					hs   []abi.ChunkHit
				}{{"search", sr.Chunks}, {"recall", rc.Chunks}} {
					fmt.Fprintf(dump, "%s\t%s\t%q", c.id, x.tool, q.Question)
					for _, h := range x.hs {
						fmt.Fprintf(dump, "\t%s:%s", h.ID, strings.Join(expandRefs([]abi.ChunkHit{h}), ","))
					}
					fmt.Fprintln(dump)
					dumpHits(dump, x.hs)
				}
			}
			res.scores["recall"].add(q.Category, ev, rrefs)
			per["recall"].add(q.Category, ev, rrefs)
			if verbose {
				t.Logf("%s c%d s5=%.2f r5=%.2f s25=%.2f r25=%.2f search@10=%.2f recall@10=%.2f bm25@10=%.2f hits=%d/%d %q ev=%v s=%v", c.id, q.Category, recallAt(ev, srefs, 5), recallAt(ev, rrefs, 5), recallAt(ev, srefs, 25), recallAt(ev, rrefs, 25),
					recallAt(ev, srefs, 10), recallAt(ev, rrefs, 10), recallAt(ev, bm.rank(q.Question, 50), 10),
					len(sr.Chunks), len(rc.Chunks), q.Question, ev, head(srefs, 10))
			}
		}
		closeStore()
	}
	return res
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

var locomoCategories = []struct {
	id   int
	name string
}{{1, "multi-hop"}, {2, "temporal"}, {3, "open-domain"}, {4, "single-hop"}, {0, "overall"}}

// markdown renders the table: one row per system and category.
func (r *locomoResult) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "LoCoMo conversations %s, categories 1–4, recall@k over cited message refs (k = 50 asked)\n\n", strings.Join(r.convs, ", "))
	b.WriteString("| system | category | n | R@5 | R@10 | R@25 | R@50 |\n|---|---|---|---|---|---|---|\n")
	for _, s := range r.systems {
		for _, c := range locomoCategories {
			sc := r.scores[s]
			fmt.Fprintf(&b, "| %s | %s | %d |", s, c.name, sc.n[c.id])
			for i := range locomoKs {
				fmt.Fprintf(&b, " %.1f |", sc.at(c.id, i))
			}
			b.WriteString("\n")
		}
	}
	// Per conversation (overall), so that a choice made on some conversations can
	// be checked on the others.
	b.WriteString("\n| conversation | n | system | R@5 | R@10 | R@25 | R@50 |\n|---|---|---|---|---|---|---|\n")
	for _, c := range r.convs {
		for _, s := range r.systems {
			sc := r.perConv[c][s]
			fmt.Fprintf(&b, "| %s | %d | %s |", c, sc.n[0], s)
			for i := range locomoKs {
				fmt.Fprintf(&b, " %.1f |", sc.at(0, i))
			}
			b.WriteString("\n")
		}
	}
	if r.skipped > 0 {
		fmt.Fprintf(&b, "\n%d questions left out: their evidence names no turn of the conversation.\n", r.skipped)
	}
	return b.String()
}

func TestLoCoMo(t *testing.T) {
	res := runLocomo(t)
	md := res.markdown()
	t.Log("\n" + md)
	if p := os.Getenv("MEMTREE_LOCOMO_MD"); p != "" {
		if err := os.WriteFile(p, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if res.scores["search"].n[0] < 100 {
		t.Fatalf("only %d questions scored", res.scores["search"].n[0])
	}
	if len(res.convs) != 5 {
		t.Logf("the floors below were measured on conversations 26, 30, 41, 42, 43; %d present: not checked", len(res.convs))
		return
	}
	// Regression floors (overall, percent), a little below what was measured on the
	// five conversations here (search 64.6/71.8/78.4/81.7, recall 64.2/71.5/78.3/81.9;
	// BM25 46.1/53.4/62.9/69.4). The targets (recall at least search's, and
	// the figures below) are logged when not met.
	floors := map[string][]float64{"search": {63, 70, 76.5, 80}, "recall": {62.5, 70, 76.5, 80}}
	targets := map[string][]float64{"recall": {60, 70, 80, 85}}
	for _, sys := range []string{"search", "recall"} {
		for i, k := range locomoKs {
			got := res.scores[sys].at(0, i)
			if got < floors[sys][i] {
				t.Errorf("%s R@%d = %.1f, want >= %.1f", sys, k, got, floors[sys][i])
			}
			if sr := res.scores["search"].at(0, i); sys == "recall" && got < sr {
				t.Logf("TARGET NOT MET: recall R@%d = %.1f below search's %.1f", k, got, sr)
			}
			if bm := res.scores["BM25"].at(0, i); sys == "search" && got < bm {
				t.Logf("TARGET NOT MET: search R@%d = %.1f below BM25's %.1f", k, got, bm)
			}
			if tg := targets[sys]; tg != nil && got < tg[i] {
				t.Logf("TARGET NOT MET: %s R@%d = %.1f, target %.0f", sys, k, got, tg[i])
			}
		}
	}
}
