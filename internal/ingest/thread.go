package ingest

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

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

var reSubjectPrefix = regexp.MustCompile(`(?i)^\s*((re|fwd?|aw|wg|sv|vs|tr|rif|antw|odp|res|r)\s*(\[\d+\])?\s*:\s*|\[[^\]]{1,40}\]\s*)+`)

// threadTitle strips reply and forward prefixes from a subject.
func threadTitle(s string) string {
	return strings.TrimSpace(reSubjectPrefix.ReplaceAllString(s, ""))
}

// isReplySubject reports whether a subject carries a reply prefix ("Re:", "AW:").
func isReplySubject(s string) bool {
	loc := reSubjectPrefix.FindStringIndex(s)
	return loc != nil && strings.Contains(strings.ToLower(s[:loc[1]]), ":")
}

// subjectWindow bounds how far apart (in time) a reply joined to a thread by its
// subject may be from the thread's latest message.
const subjectWindow = 7 * 24 * time.Hour

// mailIndex is what the threader keeps in memory of one message: enough to thread
// it. The message itself waits in the spill file.
type mailIndex struct {
	id          string
	firstRef    string // the oldest Message-ID it names (References, else In-Reply-To)
	hasRefs     bool
	date        time.Time
	guessed     bool
	seq         int
	subject     string   // threadTitle, lower case
	reply       bool     // the subject has a reply prefix
	people      []string // sender and recipients' addresses
	from        string   // sender's address
	prov        string
	origin      string
	off, length int64
	msg         *memtree.MessageInput // held in memory (nil: in the spill file)
}

// spillAfter is how many bytes of message text the threader holds in memory before
// it writes further messages to its spill file: small and medium runs never pay for
// the file, large ones stay bounded.
var spillAfter int64 = 16 << 20

// threader collects the parsed mail of a run and groups it into threads at the
// end. The first spillAfter bytes (16 MiB) of messages stay in memory; later ones are written
// to a temporary spill file as they arrive and only their threading keys stay in
// memory (a few hundred bytes a message), so a run's memory grows with the number of
// messages, not with the size of the mail it reads.
type threader struct {
	uf    *unionFind            // Message-IDs joined by References and In-Reply-To
	first map[string]*mailIndex // the first message read with each Message-ID
	dups  map[string]int        // how many other messages reused a Message-ID
	held  int64                 // bytes of the messages held in memory
	spill *os.File
	off   int64
	idx   []*mailIndex
	seq   int
	err   error
}

// add keeps one message for threading.
func (t *threader) add(m *mailMsg) error {
	if t.err != nil {
		return t.err
	}
	if t.uf == nil {
		t.uf = &unionFind{parent: map[string]string{}}
		t.first, t.dups = map[string]*mailIndex{}, map[string]int{}
	}
	from := strings.ToLower(strings.TrimSpace(m.msg.AuthorAddr))
	id := m.id
	if f, ok := t.first[m.id]; ok {
		if f.date.Unix() == m.date.Unix() && f.from == from {
			return nil // another copy of a message already read (Inbox and Archive)
		}
		// a different message reusing the Message-ID
		t.dups[m.id]++
		id = fmt.Sprintf("%s#%d", m.id, t.dups[m.id]+1)
	}
	t.seq++
	mi := &mailIndex{id: id, date: m.date, guessed: m.dateGuessed, seq: t.seq, from: from,
		subject: strings.ToLower(threadTitle(m.msg.Subject)), reply: isReplySubject(m.msg.Subject),
		prov: m.prov, origin: m.origin, hasRefs: len(m.refs) > 0 || m.replyTo != ""}
	if id == m.id {
		t.first[id] = mi
	}
	switch {
	case len(m.refs) > 0:
		mi.firstRef = m.refs[0]
	case m.replyTo != "":
		mi.firstRef = m.replyTo
	}
	t.uf.find(id)
	for _, r := range m.refs {
		t.uf.union(id, r)
	}
	if m.replyTo != "" {
		t.uf.union(id, m.replyTo)
	}
	mi.people = participants(&m.msg)
	if size := int64(len(m.msg.Text) + len(m.msg.Subject) + 256); t.held+size <= spillAfter {
		t.held += size
		msg := m.msg
		mi.msg = &msg
		t.idx = append(t.idx, mi)
		return nil
	}
	if t.spill == nil {
		f, err := os.CreateTemp("", "openhuman-ingest-mail-*")
		if err != nil {
			t.err = fmt.Errorf("threading mail needs a temporary file: %w", err)
			return t.err
		}
		os.Remove(f.Name()) // unlinked: gone when closed, even after a crash
		t.spill = f
	}
	b, err := json.Marshal(&m.msg)
	if err != nil {
		return fmt.Errorf("encode message %s: %w", m.id, err)
	}
	if _, err := t.spill.WriteAt(b, t.off); err != nil {
		t.err = fmt.Errorf("threading mail: write the temporary file: %w", err)
		return t.err
	}
	mi.off, mi.length = t.off, int64(len(b))
	t.off += int64(len(b))
	t.idx = append(t.idx, mi)
	return nil
}

// participants lists the lower-case addresses of a message's sender and recipients.
func participants(m *memtree.MessageInput) []string {
	var out []string
	add := func(a string) {
		a = strings.ToLower(strings.TrimSpace(a))
		if i := strings.LastIndexByte(a, '<'); i >= 0 {
			a = strings.TrimSuffix(a[i+1:], ">")
		}
		if strings.Contains(a, "@") {
			out = append(out, a)
		}
	}
	add(m.AuthorAddr)
	for _, r := range m.To {
		add(r)
	}
	for _, r := range m.Cc {
		add(r)
	}
	return out
}

func (t *threader) close() {
	if t.spill != nil {
		t.spill.Close()
		t.spill = nil
	}
}

// thread is one group of messages.
type thread struct {
	root string
	msgs []*mailIndex
}

// threads groups the collected messages: by References and In-Reply-To (only
// values that look like Message-IDs), then a reply that names no known message
// joins the latest earlier thread with the same subject in which its sender took
// part, within subjectWindow. Duplicate copies (same Message-ID, date and sender) keep
// the first read; a different message reusing a Message-ID is kept under a
// suffixed ref. Threads are ordered by their first message.
func (t *threader) threads() []thread {
	uf := t.uf
	if uf == nil {
		return nil
	}
	uniq := t.idx
	// Subject fallback, in time order.
	order := append([]*mailIndex(nil), uniq...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].date.Before(order[j].date) })
	type subjThread struct {
		id     string
		last   time.Time
		people map[string]bool
	}
	bySubject := map[string][]*subjThread{}
	for _, m := range order {
		// References that look like Message-IDs are authoritative, known or not;
		// only a reply that names none is threaded by its subject.
		if m.reply && !m.hasRefs && len(m.subject) >= 3 {
			cands := bySubject[m.subject]
			for i := len(cands) - 1; i >= 0; i-- {
				c := cands[i]
				if m.date.Sub(c.last) > subjectWindow || c.last.Sub(m.date) > subjectWindow {
					continue
				}
				// the reply's sender took part in the thread (a list address
				// that every message shares is not enough)
				if m.from != "" && c.people[m.from] {
					uf.union(m.id, c.id)
					break
				}
			}
		}
		if m.subject != "" {
			var st *subjThread
			for _, c := range bySubject[m.subject] {
				if uf.find(c.id) == uf.find(m.id) {
					st = c
				}
			}
			if st == nil {
				st = &subjThread{id: m.id, people: map[string]bool{}}
				bySubject[m.subject] = append(bySubject[m.subject], st)
			}
			if m.date.After(st.last) {
				st.last = m.date
			}
			for _, p := range m.people {
				st.people[p] = true
			}
		}
	}
	groups := map[string][]*mailIndex{}
	var keys []string
	for _, m := range uniq {
		k := uf.find(m.id)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], m)
	}
	var out []thread
	for _, k := range keys {
		g := groups[k]
		sort.SliceStable(g, func(i, j int) bool {
			if !g[i].date.Equal(g[j].date) {
				return g[i].date.Before(g[j].date)
			}
			return g[i].seq < g[j].seq
		})
		out = append(out, thread{root: threadRoot(g), msgs: g})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].msgs[0], out[j].msgs[0]
		if !a.date.Equal(b.date) {
			return a.date.Before(b.date)
		}
		return a.seq < b.seq
	})
	return out
}

// source reads a thread's messages back from the spill file and builds its
// source: SourceID "email:<root>", titled by the root's subject. A source whose
// messages' dates were guessed carries the tag "date-guessed".
func (t *threader) source(th thread) (memtree.SourceInput, error) {
	src := memtree.SourceInput{
		Kind:     memtree.KindEmail,
		SourceID: "email:" + th.root,
		Provider: th.msgs[0].prov,
		Origin:   th.msgs[0].origin,
	}
	guessed := false
	for _, mi := range th.msgs {
		var m memtree.MessageInput
		if mi.msg != nil {
			m, mi.msg = *mi.msg, nil
		} else {
			b := make([]byte, mi.length)
			if _, err := t.spill.ReadAt(b, mi.off); err != nil {
				return src, fmt.Errorf("threading mail: read the temporary file back: %w", err)
			}
			if err := json.Unmarshal(b, &m); err != nil {
				return src, fmt.Errorf("threading mail: decode message %s: %w", mi.id, err)
			}
		}
		m.Ref = mi.id
		if mi.id == th.root {
			src.Title = threadTitle(m.Subject)
		}
		guessed = guessed || mi.guessed
		src.Messages = append(src.Messages, m)
	}
	if src.Title == "" {
		src.Title = threadTitle(src.Messages[0].Subject)
	}
	if src.Title == "" {
		src.Title = "(no subject)"
	}
	if guessed {
		src.Tags = append(src.Tags, "date-guessed")
	}
	return src, nil
}

// threadRoot picks the root id of a thread whose messages are sorted by date.
func threadRoot(g []*mailIndex) string {
	for _, m := range g {
		if !m.hasRefs {
			return m.id
		}
	}
	// The root is not present: the oldest ancestor named by the earliest message.
	if g[0].firstRef != "" {
		return g[0].firstRef
	}
	return g[0].id
}
