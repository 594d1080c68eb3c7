// Package lazyre holds regular expressions compiled on first use instead of in
// package init. Compiling the patterns of ingest, the store and the ranking cost
// about 1.2 ms of init in every process; `mcp` and `serve` never ingest, and
// `mcp` compiles the query's patterns in the background while it waits for its
// client (CompileAll, called from the store's Warm).
package lazyre

import (
	"regexp"
	"sync"
	"sync/atomic"
)

// Regexp is a regular expression compiled on its first use or by CompileAll.
type Regexp struct {
	src  string
	once sync.Once
	re   atomic.Pointer[regexp.Regexp]
}

var (
	mu  sync.Mutex
	all []*Regexp
)

// New returns src compiled on first use. An invalid src panics then, as
// regexp.MustCompile would at init; each package's test compiles its patterns
// (Source and Get), so a typo fails a test, not a user.
func New(src string) *Regexp {
	l := &Regexp{src: src}
	mu.Lock()
	all = append(all, l)
	mu.Unlock()
	return l
}

// CompileAll compiles every pattern not compiled yet.
func CompileAll() {
	mu.Lock()
	list := append([]*Regexp(nil), all...)
	mu.Unlock()
	for _, l := range list {
		l.Get()
	}
}

// Count is the number of patterns declared so far (a test checks its package's).
func Count() int {
	mu.Lock()
	defer mu.Unlock()
	return len(all)
}

// Source is the pattern as written.
func (l *Regexp) Source() string { return l.src }

// Get returns the compiled pattern: one atomic load once it is compiled (entity
// extraction calls it for every field it reads while ingesting).
func (l *Regexp) Get() *regexp.Regexp {
	if re := l.re.Load(); re != nil {
		return re
	}
	l.once.Do(func() { l.re.Store(regexp.MustCompile(l.src)) })
	return l.re.Load()
}

// The methods below are regexp.Regexp's, on the compiled pattern.

func (l *Regexp) Match(b []byte) bool                    { return l.Get().Match(b) }
func (l *Regexp) MatchString(s string) bool              { return l.Get().MatchString(s) }
func (l *Regexp) FindStringIndex(s string) []int         { return l.Get().FindStringIndex(s) }
func (l *Regexp) FindStringSubmatch(s string) []string   { return l.Get().FindStringSubmatch(s) }
func (l *Regexp) FindStringSubmatchIndex(s string) []int { return l.Get().FindStringSubmatchIndex(s) }
func (l *Regexp) FindSubmatch(b []byte) [][]byte         { return l.Get().FindSubmatch(b) }
func (l *Regexp) FindAllString(s string, n int) []string { return l.Get().FindAllString(s, n) }
func (l *Regexp) FindAllStringIndex(s string, n int) [][]int {
	return l.Get().FindAllStringIndex(s, n)
}
func (l *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return l.Get().FindAllStringSubmatch(s, n)
}
func (l *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return l.Get().FindAllStringSubmatchIndex(s, n)
}
func (l *Regexp) FindAllSubmatch(b []byte, n int) [][][]byte { return l.Get().FindAllSubmatch(b, n) }
func (l *Regexp) ReplaceAllString(src, repl string) string {
	return l.Get().ReplaceAllString(src, repl)
}
