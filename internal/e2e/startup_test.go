package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// startup measures, from process start, the time to the initialize reply and to
// the first memory.search result.
func startup(t *testing.T, e *env, tag string) (toInit, toSearch time.Duration) {
	t.Helper()
	ls := startLive(t, e)
	ls.send(initLine(1, "startup"))
	m := ls.next()
	toInit = time.Since(ls.start)
	if m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	ls.send(initialized)
	ls.send(callLine(tag, "memory.search", `{"query":"phoenix launch","k":5}`))
	m = ls.next()
	toSearch = time.Since(ls.start)
	res, _ := m["result"].(map[string]any)
	if m["id"] != tag || res == nil || res["isError"] == true {
		t.Fatalf("memory.search: %v", m)
	}
	if err := ls.close(); err != nil {
		t.Errorf("exit: %v", err)
	}
	return toInit, toSearch
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// TestStartupFigures prints startup figures (no thresholds: run with -v to see them).
func TestStartupFigures(t *testing.T) {
	e := storeEnv(t)
	const runs = 3
	var coldInit, coldSearch, warmInit, warmSearch []time.Duration
	for i := range runs {
		cold := *e
		cold.cache = t.TempDir() // empty compilation cache
		a, b := startup(t, &cold, fmt.Sprintf("cold-%d", i))
		coldInit, coldSearch = append(coldInit, a), append(coldSearch, b)
		// The same cache again: memory.search's module is now in it.
		a, b = startup(t, &cold, fmt.Sprintf("warm-%d", i))
		warmInit, warmSearch = append(warmInit, a), append(warmSearch, b)
	}
	t.Logf("startup, median of %d runs (process start → reply):", runs)
	t.Logf("  cold cache: initialize %s, first memory.search %s  (runs: %v / %v)", median(coldInit).Round(time.Millisecond), median(coldSearch).Round(time.Millisecond), coldInit, coldSearch)
	t.Logf("  warm cache: initialize %s, first memory.search %s  (runs: %v / %v)", median(warmInit).Round(time.Millisecond), median(warmSearch).Round(time.Millisecond), warmInit, warmSearch)
}
