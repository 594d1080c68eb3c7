// Command bench measures openhuman-core against the floor of what its work costs,
// in one run, on a store it generates (or is pointed at), and prints the issue-19
// table with ratios: spawn → initialize, spawn → first memory.search (warm and
// cold compilation cache), the MCP cost of a memory.search over the Go read API,
// search/recall p50/p95, tree.list_sources, RSS after mixed calls, and ingest.
//
// The floors are measured beside ours in the same run: a bare Go process that
// answers a line, a minimal official go-sdk stdio server with one tool
// (cmd/bench/floor), direct SQLite FTS5 queries on the same store, and the memtree
// read API called in this process. Every figure is the median over -rounds
// interleaved rounds (each round runs every system once, in turn), so the load of
// a shared machine falls on all of them alike; compare ratios, not absolutes.
//
//	go run ./cmd/bench                      # generated store, 2,000 messages
//	go run ./cmd/bench -scale 20000 -rounds 7
//	go run ./cmd/bench -base /tmp/oh-base   # also time another build, side by side
//	go run ./cmd/bench -workspace ~/.openhuman/workspace -ingest=false
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

type options struct {
	bin, base, floor string
	workspace        string
	scale            int
	rounds           int
	calls            int
	mixed            int
	ingest           bool
	ingestRounds     int
	out              string
	keep             bool
	startupOnly      bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "openhuman-core binary to measure (default: go build ./cmd/openhuman-core)")
	flag.StringVar(&o.base, "base", "", "a second openhuman-core binary measured beside it (e.g. a build of main)")
	flag.StringVar(&o.floor, "floor", "", "floor server binary (default: go build ./cmd/bench/floor)")
	flag.StringVar(&o.workspace, "workspace", "", "measure the store of this workspace (holding memory_tree/chunks.db) instead of a generated one; read only")
	flag.IntVar(&o.scale, "scale", 2000, "messages in the generated mbox")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds per figure (medians are reported)")
	flag.IntVar(&o.calls, "calls", 40, "queries per round for the per-call figures")
	flag.IntVar(&o.mixed, "mixed", 1000, "mixed calls before the RSS reading")
	flag.BoolVar(&o.ingest, "ingest", true, "time ingest of the generated mbox")
	flag.IntVar(&o.ingestRounds, "ingest-rounds", 3, "rounds of the ingest figure")
	flag.StringVar(&o.out, "o", "", "also write the report to this file")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary folder (printed)")
	flag.BoolVar(&o.startupOnly, "startup-only", false, "measure only the start-up figures (spawn → initialize, spawn → first search): no per-call, RSS or ingest figures")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// system is one openhuman-core binary under test and its private folders.
type system struct {
	name  string
	bin   string
	home  string // OPENHUMAN_HOME
	ws    string // workspace (its store is read)
	cache string // XDG_CACHE_HOME with a warm compilation cache
}

func (s *system) env(cache string) []string {
	return []string{"OPENHUMAN_HOME=" + s.home, "OPENHUMAN_WORKSPACE=" + s.ws, "XDG_CACHE_HOME=" + cache,
		"OPENHUMAN_MEMORY_PIVOT_DICTIONARIES=", "OPENHUMAN_SEARXNG_ENABLED=false", "OPENHUMAN_MEMORY_EMBEDDER=none"}
}

func (s *system) storePath() string { return filepath.Join(s.ws, "memory_tree", "chunks.db") }

type report struct {
	w    io.Writer
	rows [][]string
}

func (r *report) printf(format string, a ...any) { fmt.Fprintf(r.w, format, a...) }

func (r *report) row(cells ...string) { r.rows = append(r.rows, cells) }

func (r *report) flush() {
	widths := []int{}
	for _, row := range r.rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, row := range r.rows {
		var b strings.Builder
		for i, c := range row {
			b.WriteString("| ")
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+1))
		}
		b.WriteString("|\n")
		io.WriteString(r.w, b.String())
	}
	r.rows = nil
}

func run(o options) error {
	if o.rounds < 1 || o.calls < 1 || o.scale < 10 {
		return fmt.Errorf("-rounds and -calls must be ≥ 1 and -scale ≥ 10")
	}
	tmp, err := os.MkdirTemp("", "oh-bench-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "bench: temporary folder", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	var outputs []io.Writer = []io.Writer{os.Stdout}
	if o.out != "" {
		if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
			return err
		}
		f, err := os.Create(o.out)
		if err != nil {
			return err
		}
		defer f.Close()
		outputs = append(outputs, f)
	}
	rep := &report{w: io.MultiWriter(outputs...)}

	if o.bin == "" {
		o.bin = filepath.Join(tmp, "openhuman-core")
		if err := goBuild(o.bin, "github.com/openhuman/openhuman-core/cmd/openhuman-core"); err != nil {
			return err
		}
	}
	if o.floor == "" {
		o.floor = filepath.Join(tmp, "floor")
		if err := goBuild(o.floor, "github.com/openhuman/openhuman-core/cmd/bench/floor"); err != nil {
			return err
		}
	}
	systems := []*system{{name: "ours", bin: o.bin}}
	if o.base != "" {
		systems = append(systems, &system{name: "base", bin: o.base})
	}
	for _, s := range systems {
		s.home = filepath.Join(tmp, s.name, "home")
		s.ws = filepath.Join(tmp, s.name, "ws")
		s.cache = filepath.Join(tmp, s.name, "cache")
		for _, d := range []string{s.home, s.ws, s.cache} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return err
			}
		}
		// Each binary runs from a copy written the same way: how a file came into
		// the page cache (a linker's writes, a copy, a read) sets the size of the
		// page-cache folios the kernel maps on a fault, which moved the binary's
		// file-backed RSS by up to 3 MB between two builds of the same code.
		cp := filepath.Join(tmp, s.name, "openhuman-core")
		if err := copyFile(s.bin, cp); err != nil {
			return err
		}
		s.bin = cp
	}

	load, _ := os.ReadFile("/proc/loadavg")
	rep.printf("# openhuman-core bench (%s)\n\n", time.Now().UTC().Format(time.RFC3339))
	rep.printf("%s, %d CPUs, load average at start %s; medians of %d interleaved rounds; a shared machine moves absolutes, so compare ratios.\n",
		runtime.GOARCH, runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "), o.rounds)
	for _, s := range systems {
		rep.printf("%s: %s\n", s.name, s.bin)
	}

	// The store: generated and ingested by each system, or the one given.
	mbox := filepath.Join(tmp, "bench.mbox")
	var ingestRows [][]string
	if o.workspace == "" || o.ingest {
		size, err := genMbox(mbox, o.scale)
		if err != nil {
			return err
		}
		rep.printf("generated input: %d messages, %.1f MB mbox\n", o.scale, float64(size)/1e6)
	}
	if o.workspace == "" {
		for _, s := range systems {
			if _, _, out, err := runTimed(s.bin, []string{"ingest", mbox}, s.env(s.cache)); err != nil {
				return fmt.Errorf("%s: ingest: %w", s.name, err)
			} else if o.keep {
				fmt.Fprint(os.Stderr, tail(out, 400))
			}
		}
	} else {
		if _, err := os.Stat(filepath.Join(o.workspace, "memory_tree", "chunks.db")); err != nil {
			return fmt.Errorf("-workspace %s: %w", o.workspace, err)
		}
		abs, _ := filepath.Abs(filepath.Join(o.workspace, "memory_tree"))
		for _, s := range systems {
			if err := os.Symlink(abs, filepath.Join(s.ws, "memory_tree")); err != nil {
				return err
			}
		}
	}
	if o.ingest && !o.startupOnly {
		rows, err := benchIngest(o, systems, mbox, tmp)
		if err != nil {
			return err
		}
		ingestRows = rows
	}

	store, err := memtree.OpenReadOnly(systems[0].storePath())
	if err != nil {
		return err
	}
	defer store.Close()
	st, err := store.Stats(context.Background())
	if err != nil {
		return err
	}
	rep.printf("store: %d chunks, %d sources, %d entities (%s)\n\n", st.TotalChunks(), sum(st.Sources), st.Entities, systems[0].storePath())
	db, err := sql.Open("sqlite", "file:"+systems[0].storePath()+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	qs, err := pickQueries(db, o.calls)
	if err != nil {
		return err
	}

	rep.row("figure", "floor (same run)", "ours", "ours ÷ floor", "base", "ours ÷ base")
	rep.row("---", "---", "---", "---", "---", "---")
	if err := benchStartup(o, rep, systems, qs, tmp); err != nil {
		return err
	}
	if o.startupOnly {
		rep.flush()
		return nil
	}
	if err := benchCalls(o, rep, systems, store, db, qs); err != nil {
		return err
	}
	if err := benchRSS(o, rep, systems, qs); err != nil {
		return err
	}
	for _, r := range ingestRows {
		rep.row(r...)
	}
	rep.flush()
	return nil
}

func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// pickQueries draws n search queries from the store's own vocabulary: single terms
// of high, middle and low document frequency and two-term AND queries, so any store
// (generated or real) gets queries that match.
func pickQueries(db *sql.DB, n int) ([]string, error) {
	rows, err := db.Query(`SELECT term, doc FROM chunks_fts_vocab WHERE length(term) >= 4 AND term GLOB '[a-z]*' AND doc >= 2 ORDER BY doc DESC LIMIT 4000`)
	if err != nil {
		return nil, fmt.Errorf("read the store's vocabulary: %w", err)
	}
	defer rows.Close()
	var terms []string
	for rows.Next() {
		var t string
		var d int
		if err := rows.Scan(&t, &d); err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(terms) < 10 {
		return nil, fmt.Errorf("the store has too few distinct words (%d) to draw queries from", len(terms))
	}
	r := rand.New(rand.NewPCG(1, 9))
	pick := func(lo, hi float64) string {
		a, b := int(lo*float64(len(terms))), int(hi*float64(len(terms)))
		return terms[a+r.IntN(max(b-a, 1))]
	}
	out := make([]string, 0, n)
	for len(out) < n {
		switch len(out) % 4 {
		case 0:
			out = append(out, pick(0, 0.02)) // common
		case 1:
			out = append(out, pick(0.1, 0.5))
		case 2:
			out = append(out, pick(0.5, 1)) // rare
		case 3:
			out = append(out, pick(0, 0.1)+" "+pick(0.02, 0.3))
		}
	}
	return out, nil
}

// startupRound times one spawn: to the initialize reply and, when tool is set, to
// the result of a first call of it.
func startupRound(bin string, args, env []string, tool string, arg any) (initD, firstD time.Duration, err error) {
	s, err := spawn(bin, args, env)
	if err != nil {
		return 0, 0, err
	}
	defer s.close()
	if err := s.initialize(); err != nil {
		return 0, 0, err
	}
	initD = time.Since(s.start)
	if tool != "" {
		if _, _, err := s.call(tool, arg); err != nil {
			return initD, 0, err
		}
		firstD = time.Since(s.start)
	}
	return initD, firstD, nil
}

func benchStartup(o options, rep *report, systems []*system, qs []string, tmp string) error {
	// Warm each system's compilation cache (and the page cache) once, untimed.
	for _, s := range systems {
		if _, _, err := startupRound(s.bin, []string{"mcp"}, s.env(s.cache), "memory.search", map[string]any{"query": qs[0]}); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	var bare, sdkInit, sdkFirst []time.Duration
	initW := make([][]time.Duration, len(systems))
	firstW := make([][]time.Duration, len(systems))
	firstC := make([][]time.Duration, len(systems))
	for r := 0; r < o.rounds; r++ {
		q := map[string]any{"query": qs[r%len(qs)]}
		// Every variant once per round, starting at a different one each round.
		steps := []func() error{
			func() error {
				d, _, err := startupRound(o.floor, []string{"-mode", "bare"}, nil, "", nil)
				if err != nil {
					return fmt.Errorf("floor bare: %w", err)
				}
				bare = append(bare, d)
				return nil
			},
			func() error {
				d, f, err := startupRound(o.floor, []string{"-mode", "sdk"}, nil, "memory.search", q)
				if err != nil {
					return fmt.Errorf("floor sdk: %w", err)
				}
				sdkInit, sdkFirst = append(sdkInit, d), append(sdkFirst, f)
				return nil
			},
		}
		for i, s := range systems {
			steps = append(steps, func() error {
				d, f, err := startupRound(s.bin, []string{"mcp"}, s.env(s.cache), "memory.search", q)
				if err != nil {
					return fmt.Errorf("%s warm: %w", s.name, err)
				}
				initW[i], firstW[i] = append(initW[i], d), append(firstW[i], f)
				return nil
			}, func() error {
				cold := filepath.Join(tmp, s.name, fmt.Sprintf("cold%d", r))
				defer os.RemoveAll(cold)
				_, f, err := startupRound(s.bin, []string{"mcp"}, s.env(cold), "memory.search", q)
				if err != nil {
					return fmt.Errorf("%s cold: %w", s.name, err)
				}
				firstC[i] = append(firstC[i], f)
				return nil
			})
		}
		for k := range steps {
			if err := steps[(r+k)%len(steps)](); err != nil {
				return err
			}
		}
	}
	sdkI, bareI := median(sdkInit), median(bare)
	rowOf(rep, systems, "spawn → initialize, warm cache", fmt.Sprintf("go-sdk %s; bare %s", ms(sdkI), ms(bareI)), sdkI, medians(initW))
	rowOf(rep, systems, "spawn → first memory.search, warm cache", "go-sdk "+ms(median(sdkFirst)), median(sdkFirst), medians(firstW))
	rowOf(rep, systems, "spawn → first memory.search, cold cache", "go-sdk "+ms(median(sdkFirst)), median(sdkFirst), medians(firstC))
	return nil
}

func medians(x [][]time.Duration) []time.Duration {
	out := make([]time.Duration, len(x))
	for i, v := range x {
		out[i] = median(v)
	}
	return out
}

// rowOf adds a row: floor text, ours, ours ÷ floor (when floor > 0), base, ours ÷ base.
func rowOf(rep *report, systems []*system, figure, floorText string, floor time.Duration, vals []time.Duration) {
	cells := []string{figure, floorText, ms(vals[0]), ratio(vals[0], floor)}
	if len(systems) > 1 {
		cells = append(cells, ms(vals[1]), ratio(vals[0], vals[1]))
	} else {
		cells = append(cells, "", "")
	}
	rep.row(cells...)
}

func ratio(a, b time.Duration) string {
	if b <= 0 || a <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func ms(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= 100*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
}

func median(x []time.Duration) time.Duration { return pct(x, 50) }

// pct returns the p-th percentile (nearest rank) of x.
func pct(x []time.Duration, p int) time.Duration {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(min(i, len(s))-1, 0)]
}

// latencies holds one system's per-round p50 and p95.
type latencies struct{ p50, p95 []time.Duration }

func (l *latencies) add(x []time.Duration) {
	l.p50 = append(l.p50, pct(x, 50))
	l.p95 = append(l.p95, pct(x, 95))
}

func (l *latencies) text() string {
	return ms(median(l.p50)) + " / " + ms(median(l.p95))
}

func benchCalls(o options, rep *report, systems []*system, st *memtree.Store, db *sql.DB, qs []string) error {
	store := memory.Default(st) // the read API the host functions call
	ctx := context.Background()
	sessions := make([]*server, len(systems))
	for i, s := range systems {
		srv, err := spawn(s.bin, []string{"mcp"}, s.env(s.cache))
		if err != nil {
			return err
		}
		defer srv.close()
		if err := srv.initialize(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		sessions[i] = srv
	}
	floor, err := spawn(o.floor, []string{"-mode", "sdk"}, nil)
	if err != nil {
		return err
	}
	defer floor.close()
	if err := floor.initialize(); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	// Warm-up: every query once everywhere (compiles, caches, page cache).
	for _, q := range qs {
		for i, srv := range sessions {
			if _, _, err := srv.call("memory.search", map[string]any{"query": q, "k": 10}); err != nil {
				return fmt.Errorf("%s: %w", systems[i].name, err)
			}
			if _, _, err := srv.call("memory.recall", map[string]any{"query": q, "k": 10}); err != nil {
				return fmt.Errorf("%s: %w", systems[i].name, err)
			}
		}
		if _, err := store.Search(ctx, abi.SearchRequest{Query: q, K: 10}); err != nil {
			return err
		}
		if _, err := store.Recall(ctx, abi.RecallRequest{Query: q, K: 10}); err != nil {
			return err
		}
	}
	listArgs := map[string]any{}
	if res, _, err := sessions[0].request("tools/list", map[string]any{}); err == nil && strings.Contains(string(res), `"limit"`) {
		listArgs["limit"] = 50 // a paged tree.list_sources
	}

	var fts, apiS, apiR, floorCall, floorPing latencies
	mcpS := make([]latencies, len(systems))
	mcpR := make([]latencies, len(systems))
	ping := make([]latencies, len(systems))
	lists := make([]latencies, len(systems))
	listErr := make([]string, len(systems))
	var overhead [][]time.Duration = make([][]time.Duration, len(systems))
	var overheadRatio = make([][]float64, len(systems))
	ftsQ := `SELECT c.id, c.title, snippet(chunks_fts, 0, '', '', '…', 40) FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
		WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 10`
	for r := 0; r < o.rounds; r++ {
		var x []time.Duration
		for _, q := range qs {
			t0 := time.Now()
			rows, err := db.QueryContext(ctx, ftsQ, ftsExpr(q))
			if err != nil {
				return fmt.Errorf("direct FTS5 %q: %w", q, err)
			}
			for rows.Next() {
				var id, title, snip string
				if err := rows.Scan(&id, &title, &snip); err != nil {
					rows.Close()
					return err
				}
			}
			rows.Close()
			x = append(x, time.Since(t0))
		}
		fts.add(x)

		// Query by query: the read API in this process, then each server, so a change
		// of the machine's load falls on all of them alike.
		direct, directR := []time.Duration{}, []time.Duration{}
		viaS := make([][]time.Duration, len(sessions))
		viaR := make([][]time.Duration, len(sessions))
		for j, q := range qs {
			// Each query once per system, starting at a different system each time,
			// so that no system always runs first (cold) or last.
			steps := make([]func() error, 0, 2*(len(sessions)+1))
			steps = append(steps, func() error {
				t0 := time.Now()
				res, err := store.Search(ctx, abi.SearchRequest{Query: q, K: 10})
				if err != nil {
					return err
				}
				if _, err := json.Marshal(res); err != nil { // the host encodes what it hands the guest
					return err
				}
				direct = append(direct, time.Since(t0))
				t0 = time.Now()
				rres, err := store.Recall(ctx, abi.RecallRequest{Query: q, K: 10})
				if err != nil {
					return err
				}
				if _, err := json.Marshal(rres); err != nil {
					return err
				}
				directR = append(directR, time.Since(t0))
				return nil
			})
			for i, srv := range sessions {
				steps = append(steps, func() error {
					_, d, err := srv.call("memory.search", map[string]any{"query": q, "k": 10})
					if err != nil {
						return fmt.Errorf("%s: %w", systems[i].name, err)
					}
					viaS[i] = append(viaS[i], d)
					_, d, err = srv.call("memory.recall", map[string]any{"query": q, "k": 10})
					if err != nil {
						return fmt.Errorf("%s: %w", systems[i].name, err)
					}
					viaR[i] = append(viaR[i], d)
					return nil
				})
			}
			for k := range steps {
				if err := steps[(j+r+k)%len(steps)](); err != nil {
					return err
				}
			}
		}
		apiS.add(direct)
		apiR.add(directR)
		for i := range sessions {
			mcpS[i].add(viaS[i])
			mcpR[i].add(viaR[i])
			overhead[i] = append(overhead[i], pct(viaS[i], 50)-pct(direct, 50))
			overheadRatio[i] = append(overheadRatio[i], float64(pct(viaS[i], 50))/float64(pct(direct, 50)))
		}

		// Protocol floors: ping and a trivial tools/call on the go-sdk server, ping on ours.
		x = x[:0]
		for _, q := range qs {
			_, d, err := floor.call("memory.search", map[string]any{"query": q})
			if err != nil {
				return err
			}
			x = append(x, d)
		}
		floorCall.add(x)
		x = x[:0]
		for range qs {
			_, d, err := floor.request("ping", map[string]any{})
			if err != nil {
				return err
			}
			x = append(x, d)
		}
		floorPing.add(x)
		for i, srv := range sessions {
			x = x[:0]
			for range qs {
				_, d, err := srv.request("ping", map[string]any{})
				if err != nil {
					return err
				}
				x = append(x, d)
			}
			ping[i].add(x)
			x = x[:0]
			for j := 0; j < 5 && listErr[i] == ""; j++ {
				_, d, err := srv.call("tree.list_sources", listArgs)
				if err != nil {
					// A large store's unpaged listing can exceed the result limit
					// (issue 19): a figure, not a reason to stop.
					listErr[i] = fmt.Sprintf("fails after %s: %.90s", ms(d), err.Error())
					break
				}
				x = append(x, d)
			}
			if listErr[i] == "" {
				lists[i].add(x)
			}
		}
	}

	each := func(l []latencies) []string {
		out := []string{}
		for _, x := range l {
			out = append(out, x.text())
		}
		return out
	}
	oh := make([]time.Duration, len(systems))
	for i := range systems {
		oh[i] = median(overhead[i])
	}
	pings := make([]time.Duration, len(systems))
	for i := range systems {
		pings[i] = median(ping[i].p50)
	}
	rowOf(rep, systems, "ping p50", "go-sdk "+ms(median(floorPing.p50)), median(floorPing.p50), pings)
	ohText := make([]string, len(systems))
	for i := range systems {
		rs := slices.Clone(overheadRatio[i])
		slices.Sort(rs)
		sign := ""
		if oh[i] < 0 { // the machine's load moved between the two measurements
			sign = "−"
		}
		ohText[i] = fmt.Sprintf("%s%s (%.2f× the direct call)", sign, ms(max(oh[i], -oh[i])), rs[len(rs)/2])
	}
	cells := []string{"memory.search through MCP − read API, p50", "go-sdk trivial tools/call " + ms(median(floorCall.p50)) + "; direct API p50 " + ms(median(apiS.p50)), ohText[0], ""}
	if len(systems) > 1 {
		cells = append(cells, ohText[1], ratio(oh[0], oh[1]))
	} else {
		cells = append(cells, "", "")
	}
	rep.row(cells...)
	p := func(l []latencies) []time.Duration {
		out := []time.Duration{}
		for _, x := range l {
			out = append(out, median(x.p50))
		}
		return out
	}
	sp := p(mcpS)
	c := []string{"memory.search p50 / p95 (MCP)", "FTS5 AND " + fts.text() + "; API " + apiS.text(), each(mcpS)[0], ratio(sp[0], median(fts.p50)) + " (p50 ÷ FTS5)"}
	if len(systems) > 1 {
		c = append(c, each(mcpS)[1], ratio(sp[0], sp[1]))
	} else {
		c = append(c, "", "")
	}
	rep.row(c...)
	rp := p(mcpR)
	c = []string{"memory.recall p50 / p95 (MCP)", "API " + apiR.text(), each(mcpR)[0], ratio(rp[0], median(apiR.p50)) + " (p50 ÷ API)"}
	if len(systems) > 1 {
		c = append(c, each(mcpR)[1], ratio(rp[0], rp[1]))
	} else {
		c = append(c, "", "")
	}
	rep.row(c...)
	lp := p(lists)
	what := "tree.list_sources, whole list"
	if len(listArgs) > 0 {
		what = "tree.list_sources, one page of 50"
	}
	lt := each(lists)
	for i := range systems {
		if listErr[i] != "" {
			lt[i] = listErr[i]
		}
	}
	c = []string{what + " p50 / p95", "—", lt[0], ""}
	if len(systems) > 1 {
		c = append(c, lt[1], ratio(lp[0], lp[1]))
	} else {
		c = append(c, "", "")
	}
	rep.row(c...)
	return nil
}

// ftsExpr makes an FTS5 AND query of plain words.
func ftsExpr(q string) string {
	f := strings.Fields(q)
	for i, w := range f {
		f[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(f, " ")
}

// benchRSS spawns each system, makes o.mixed mixed calls and reads its RSS.
func benchRSS(o options, rep *report, systems []*system, qs []string) error {
	if o.mixed <= 0 {
		return nil
	}
	vals := make([]string, len(systems))
	kb := make([]int64, len(systems))
	for i, s := range systems {
		srv, err := spawn(s.bin, []string{"mcp"}, s.env(s.cache))
		if err != nil {
			return err
		}
		if err := srv.initialize(); err != nil {
			srv.close()
			return err
		}
		var ids []string
		failed := 0
		for n := 0; n < o.mixed; n++ {
			q := qs[n%len(qs)]
			var err error
			var res json.RawMessage
			switch n % 8 {
			case 0, 1, 2:
				res, _, err = srv.call("memory.search", map[string]any{"query": q, "k": 10})
				if err == nil && len(ids) < 64 {
					ids = append(ids, chunkIDs(res)...)
				}
			case 3, 4:
				_, _, err = srv.call("memory.recall", map[string]any{"query": q, "k": 10})
			case 5:
				if len(ids) > 0 {
					_, _, err = srv.call("tree.read_chunk", map[string]any{"chunk_id": ids[n%len(ids)]})
				}
			case 6:
				_, _, err = srv.call("tree.browse", map[string]any{"k": 20})
			case 7:
				if n%16 == 7 {
					_, _, err = srv.call("tree.top_entities", map[string]any{"k": 20})
				} else {
					_, _, err = srv.call("tree.list_sources", map[string]any{})
				}
			}
			if err != nil {
				if !strings.Contains(err.Error(), "tool error") {
					srv.close()
					return fmt.Errorf("%s: mixed call %d: %w", s.name, n, err)
				}
				failed++ // a tool error (an oversized listing) is counted, not fatal
			}
		}
		rss, hwm, anon, file := srv.memKB()
		kb[i] = rss
		vals[i] = fmt.Sprintf("%.1f MB (peak %.1f; anon %.1f, file %.1f)", float64(rss)/1024, float64(hwm)/1024, float64(anon)/1024, float64(file)/1024)
		if failed > 0 {
			vals[i] += fmt.Sprintf(", %d calls failed", failed)
		}
		srv.close()
	}
	c := []string{fmt.Sprintf("RSS after %d mixed calls (one run)", o.mixed), "—", vals[0], ""}
	if len(systems) > 1 {
		c = append(c, vals[1], fmt.Sprintf("%.2f×", float64(kb[0])/float64(kb[1])))
	} else {
		c = append(c, "", "")
	}
	rep.row(c...)
	return nil
}

func chunkIDs(res json.RawMessage) []string {
	var r struct {
		StructuredContent struct {
			Chunks []struct {
				ID string `json:"id"`
			} `json:"chunks"`
		} `json:"structuredContent"`
	}
	_ = json.Unmarshal(res, &r)
	var out []string
	for _, h := range r.StructuredContent.Chunks {
		out = append(out, h.ID)
	}
	return out
}

// benchIngest times `ingest` of the generated mbox into a fresh store, per round
// and system, and returns the table rows (messages/s and peak RSS).
func benchIngest(o options, systems []*system, mbox, tmp string) ([][]string, error) {
	rate := make([][]float64, len(systems))
	peak := make([][]int64, len(systems))
	for r := 0; r < o.ingestRounds; r++ {
		for i, s := range systems {
			home := filepath.Join(tmp, s.name, fmt.Sprintf("ingest%d", r))
			env := []string{"OPENHUMAN_HOME=" + home, "OPENHUMAN_WORKSPACE=" + filepath.Join(home, "ws"), "XDG_CACHE_HOME=" + s.cache,
				"OPENHUMAN_MEMORY_PIVOT_DICTIONARIES="}
			d, maxrss, _, err := runTimed(s.bin, []string{"ingest", mbox}, env)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			rate[i] = append(rate[i], float64(o.scale)/d.Seconds())
			peak[i] = append(peak[i], maxrss)
			os.RemoveAll(home)
		}
	}
	text := func(i int) (string, float64) {
		slices.Sort(rate[i])
		slices.Sort(peak[i])
		m := rate[i][len(rate[i])/2]
		return fmt.Sprintf("%.0f msg/s, peak RSS %.0f MB", m, float64(peak[i][len(peak[i])/2])/1024), m
	}
	t0, r0 := text(0)
	c := []string{fmt.Sprintf("ingest, generated %d-message mbox (%d rounds)", o.scale, o.ingestRounds), "—", t0, ""}
	if len(systems) > 1 {
		t1, r1 := text(1)
		c = append(c, t1, fmt.Sprintf("%.2f× the rate", r0/r1))
	} else {
		c = append(c, "", "")
	}
	return [][]string{c}, nil
}

// copyFile writes a copy of the executable src at dst.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
