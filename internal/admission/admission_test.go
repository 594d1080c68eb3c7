package admission

import (
	"strings"
	"testing"
)

// Each principal is held to its own bounds and all of them to the totals;
// a release gives back exactly its charge, once.
func TestLimiterPerPrincipalAndTotal(t *testing.T) {
	l := New(Limits{MaxRequests: 2, MaxBodyBytes: 100, MaxStreams: 1, TotalRequests: 3, TotalBodyBytes: 150, TotalStreams: 2})
	a1, err := l.Request("a", 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Request("a", 50); err == nil || !strings.Contains(err.Reason, "over the 100-byte limit") {
		t.Errorf("a's bytes: %v", err)
	}
	a2, err := l.Request("a", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Request("a", 0); err == nil || !strings.Contains(err.Reason, "(2, the limit") {
		t.Errorf("a's requests: %v", err)
	}
	if _, err := l.Request("b", 90); err == nil || !strings.Contains(err.Reason, "its 150-byte limit") {
		t.Errorf("total bytes: %v", err)
	}
	b1, err := l.Request("b", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Request("b", 0); err == nil || !strings.Contains(err.Reason, "server has 3 HTTP requests") {
		t.Errorf("total requests: %v", err)
	}
	s1, err := l.Stream("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stream("a"); err == nil || !strings.Contains(err.Reason, "MCP streams open") {
		t.Errorf("a's streams: %v", err)
	}
	a1()
	a1() // idempotent
	if r, b, s := l.Held("a"); r != 1 || b != 10 || s != 1 {
		t.Errorf("a holds %d requests, %d bytes, %d streams after one release", r, b, s)
	}
	a2()
	b1()
	s1()
	if r, b, s := l.Held("a"); r != 0 || b != 0 || s != 0 || len(l.by) != 0 || l.total != (held{}) {
		t.Errorf("after every release: a %d/%d/%d, %d principals, total %+v", r, b, s, len(l.by), l.total)
	}
}
