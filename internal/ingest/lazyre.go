package ingest

import (
	"regexp"
	"sync"
)

// lazyRegexp is a regular expression compiled on its first use. The package's
// patterns cost ≈ 0.9 ms of package init (regexp compilation) in every process,
// and `mcp` and `serve`, which never ingest, start faster without it.
type lazyRegexp struct {
	src string
	get func() *regexp.Regexp
}

// lazyPatterns lists every lazyRegexp, so a test can compile them all.
var lazyPatterns []*lazyRegexp

// lazyRE returns src compiled on first use; an invalid src panics then (a test
// compiles every pattern).
func lazyRE(src string) *lazyRegexp {
	l := &lazyRegexp{src: src, get: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })}
	lazyPatterns = append(lazyPatterns, l)
	return l
}

func (l *lazyRegexp) Match(b []byte) bool       { return l.get().Match(b) }
func (l *lazyRegexp) MatchString(s string) bool { return l.get().MatchString(s) }
func (l *lazyRegexp) FindStringIndex(s string) []int {
	return l.get().FindStringIndex(s)
}
func (l *lazyRegexp) FindStringSubmatch(s string) []string {
	return l.get().FindStringSubmatch(s)
}
func (l *lazyRegexp) FindAllStringIndex(s string, n int) [][]int {
	return l.get().FindAllStringIndex(s, n)
}
func (l *lazyRegexp) FindAllStringSubmatch(s string, n int) [][]string {
	return l.get().FindAllStringSubmatch(s, n)
}
func (l *lazyRegexp) FindAllSubmatch(b []byte, n int) [][][]byte {
	return l.get().FindAllSubmatch(b, n)
}
func (l *lazyRegexp) ReplaceAllString(src, repl string) string {
	return l.get().ReplaceAllString(src, repl)
}
func (l *lazyRegexp) FindSubmatch(b []byte) [][]byte { return l.get().FindSubmatch(b) }
