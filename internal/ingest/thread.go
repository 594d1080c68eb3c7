package ingest

import (
	"regexp"
	"sort"
	"strings"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// unionFind groups Message-IDs into threads.
type unionFind struct{ parent map[string]string }

func (u *unionFind) find(x string) string {
	p, ok := u.parent[x]
	if !ok {
		u.parent[x] = x
		return x
	}
	if p == x {
		return x
	}
	r := u.find(p)
	u.parent[x] = r
	return r
}

func (u *unionFind) union(a, b string) {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return
	}
	// deterministic: the lexically smaller id represents the set
	if rb < ra {
		ra, rb = rb, ra
	}
	u.parent[rb] = ra
}

var reSubjectPrefix = regexp.MustCompile(`(?i)^\s*((re|fwd?|aw|wg|sv|vs|tr|rif|antw)\s*(\[\d+\])?\s*:\s*)+`)

// threadTitle strips reply and forward prefixes from a subject.
func threadTitle(s string) string {
	return strings.TrimSpace(reSubjectPrefix.ReplaceAllString(s, ""))
}

// threadMails groups messages into threads by References and In-Reply-To and
// returns one source per thread, ordered by the thread's first message. A thread's
// SourceID is "email:<root>", where the root is the earliest message of the thread
// that refers to no other, or else the oldest ancestor the messages reference.
// Duplicate Message-IDs keep the first copy read.
func threadMails(msgs []*mailMsg) []memtree.SourceInput {
	uf := &unionFind{parent: map[string]string{}}
	seen := map[string]bool{}
	var uniq []*mailMsg
	for _, m := range msgs {
		if seen[m.id] {
			continue
		}
		seen[m.id] = true
		uniq = append(uniq, m)
		uf.find(m.id)
		for _, r := range m.refs {
			uf.union(m.id, r)
		}
		if m.replyTo != "" {
			uf.union(m.id, m.replyTo)
		}
	}
	groups := map[string][]*mailMsg{}
	var keys []string
	for _, m := range uniq {
		k := uf.find(m.id)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], m)
	}
	type thread struct {
		root string
		msgs []*mailMsg
	}
	var threads []thread
	for _, k := range keys {
		g := groups[k]
		sort.SliceStable(g, func(i, j int) bool {
			if !g[i].date.Equal(g[j].date) {
				return g[i].date.Before(g[j].date)
			}
			return g[i].seq < g[j].seq
		})
		threads = append(threads, thread{root: threadRoot(g), msgs: g})
	}
	sort.SliceStable(threads, func(i, j int) bool {
		a, b := threads[i].msgs[0], threads[j].msgs[0]
		if !a.date.Equal(b.date) {
			return a.date.Before(b.date)
		}
		return a.seq < b.seq
	})
	out := make([]memtree.SourceInput, 0, len(threads))
	for _, t := range threads {
		src := memtree.SourceInput{
			Kind:     memtree.KindEmail,
			SourceID: "email:" + t.root,
			Provider: t.msgs[0].prov,
			Origin:   t.msgs[0].origin,
		}
		for _, m := range t.msgs {
			if m.id == t.root {
				src.Title = threadTitle(m.msg.Subject)
			}
			src.Messages = append(src.Messages, m.msg)
		}
		if src.Title == "" {
			src.Title = threadTitle(t.msgs[0].msg.Subject)
		}
		if src.Title == "" {
			src.Title = "(no subject)"
		}
		out = append(out, src)
	}
	return out
}

// threadRoot picks the root id of a thread whose messages are sorted by date.
func threadRoot(g []*mailMsg) string {
	for _, m := range g {
		if len(m.refs) == 0 && m.replyTo == "" {
			return m.id
		}
	}
	// The root is not present: the oldest ancestor named by the earliest message.
	m := g[0]
	if len(m.refs) > 0 {
		return m.refs[0]
	}
	if m.replyTo != "" {
		return m.replyTo
	}
	return m.id
}
