package memtree

import (
	"regexp"
	"sync"
	"sync/atomic"
)

// lazyRegexp is a regular expression compiled on its first use, or by Warm.
// The package's patterns cost ≈ 0.3 ms of package init in every process (the
// query's date patterns most of it); `mcp` compiles them in Warm, which runs in
// the background while the server waits for its client, instead of before main.
type lazyRegexp struct {
	src  string
	once sync.Once
	re   atomic.Pointer[regexp.Regexp]
}

// get returns the compiled pattern: one atomic load once it is compiled (entity
// extraction calls it for every field it reads while ingesting).
func (l *lazyRegexp) get() *regexp.Regexp {
	if re := l.re.Load(); re != nil {
		return re
	}
	l.once.Do(l.compile)
	return l.re.Load()
}

func (l *lazyRegexp) compile() { l.re.Store(regexp.MustCompile(l.src)) }

// lazyPatterns lists every lazyRegexp (compilePatterns, and a test compiles them all).
var lazyPatterns []*lazyRegexp

// lazyRE returns src compiled on first use; an invalid src panics then (a test
// compiles every pattern).
func lazyRE(src string) *lazyRegexp {
	l := &lazyRegexp{src: src}
	lazyPatterns = append(lazyPatterns, l)
	return l
}

// compilePatterns compiles every pattern not compiled yet.
func compilePatterns() {
	for _, l := range lazyPatterns {
		l.get()
	}
}

func (l *lazyRegexp) MatchString(s string) bool            { return l.get().MatchString(s) }
func (l *lazyRegexp) FindStringIndex(s string) []int       { return l.get().FindStringIndex(s) }
func (l *lazyRegexp) FindStringSubmatch(s string) []string { return l.get().FindStringSubmatch(s) }
func (l *lazyRegexp) FindStringSubmatchIndex(s string) []int {
	return l.get().FindStringSubmatchIndex(s)
}
func (l *lazyRegexp) FindAllString(s string, n int) []string { return l.get().FindAllString(s, n) }
func (l *lazyRegexp) FindAllStringIndex(s string, n int) [][]int {
	return l.get().FindAllStringIndex(s, n)
}
func (l *lazyRegexp) FindAllStringSubmatch(s string, n int) [][]string {
	return l.get().FindAllStringSubmatch(s, n)
}
func (l *lazyRegexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return l.get().FindAllStringSubmatchIndex(s, n)
}
func (l *lazyRegexp) ReplaceAllString(src, repl string) string {
	return l.get().ReplaceAllString(src, repl)
}
