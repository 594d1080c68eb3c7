package mail

import (
	"bufio"
	"fmt"
	"hash/maphash"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

var reSubjectPrefix = lazyre.New(`(?i)^\s*((re|fwd?|aw|wg|sv|vs|tr|rif|antw|odp|res|r)\s*(\[\d+\])?\s*:\s*|\[[^\]]{1,40}\]\s*)+`)

// ThreadTitle strips reply and forward prefixes from a subject.
func ThreadTitle(s string) string {
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

// SpillAfter is how many bytes of message text the threader holds in memory before
// it writes further messages to its spill file: small and medium runs never pay for
// the file, large ones stay bounded.
var SpillAfter int64 = 4 << 20

// noNode marks a missing node index.
const noNode = ^uint32(0)

// Flags of a mailRec.
const (
	recGuessed  = 1 << iota // the date was guessed
	recHasRefs              // it names a Message-ID (References or In-Reply-To)
	recReply                // its subject has a reply prefix
	recSubject              // it has a subject (after ThreadTitle)
	recLongSubj             // that subject has 3 bytes or more
	recFrom                 // it has a sender address
)

// mailRec is what the threader keeps in memory of one message: the keys threading
// needs, as fixed-size numbers (48 bytes). Strings (ids, subjects,
// addresses) are kept as 64-bit hashes; the message itself, with the strings the
// sources need back, waits in the spill file (or, for the first SpillAfter bytes,
// in memory).
type mailRec struct {
	date   int64  // UnixNano
	subj   uint64 // hash of the lower-case ThreadTitle
	from   uint64 // hash of the sender's lower-case address
	off    int64  // offset in the spill file; -1: held in memory
	length uint32 // bytes in the spill file
	node   uint32 // the node of its id (Message-ID, or a suffixed one for a reused id)
	flags  uint8
}

// spillRec is one message as the threader stores it until its thread is written:
// the message (Ref set to its final id) and the strings its source needs.
type spillRec struct {
	firstRef, prov, origin string
	msg                    memtree.MessageInput
}

// Threader collects the parsed mail of a run and groups it into threads at the
// end, with memory that grows by about 100 bytes a message whatever the messages
// hold: Message-IDs and the ids they name are nodes of a union-find keyed by a
// 64-bit hash of the id (two different ids share a hash with a probability of about
// n²/2⁶⁵: 3·10⁻⁸ for a million ids), each message's threading keys are a fixed-size
// mailRec, and the messages themselves go to an unlinked temporary spill file once
// the first SpillAfter bytes (4 MiB) are held in memory. When every file is read,
// threads are formed from the records and written one at a time, each read back
// from the spill file, so no more than one thread's messages is ever in memory.
type Threader struct {
	seed    maphash.Seed
	nodes   map[uint64]uint32 // id hash → node
	parent  []uint32          // union-find over nodes
	nodeMsg []int32           // node → the first message read with that id (-1: none)
	dups    map[uint32]int    // how many other messages reused a node's Message-ID
	recs    []mailRec
	held    map[int32]*spillRec
	heldN   int64 // bytes held in memory
	spill   *os.File
	w       *bufio.Writer
	off     int64
	buf     []byte
	err     error
}

func (t *Threader) hash(s string) uint64 { return maphash.String(t.seed, s) }

// node returns the node of an id, adding it when new.
func (t *Threader) node(id string) uint32 {
	h := t.hash(id)
	if n, ok := t.nodes[h]; ok {
		return n
	}
	n := uint32(len(t.parent))
	t.nodes[h] = n
	t.parent = append(t.parent, n)
	t.nodeMsg = append(t.nodeMsg, -1)
	return n
}

func (t *Threader) find(x uint32) uint32 {
	for t.parent[x] != x {
		t.parent[x] = t.parent[t.parent[x]] // path halving
		x = t.parent[x]
	}
	return x
}

func (t *Threader) union(a, b uint32) {
	ra, rb := t.find(a), t.find(b)
	if ra == rb {
		return
	}
	if rb < ra {
		ra, rb = rb, ra
	}
	t.parent[rb] = ra
}

// Add keeps one message for threading.
func (t *Threader) Add(m *readkit.MailMessage) error {
	if t.err != nil {
		return t.err
	}
	if t.nodes == nil {
		t.seed = maphash.MakeSeed()
		t.nodes, t.dups, t.held = map[uint64]uint32{}, map[uint32]int{}, map[int32]*spillRec{}
	}
	if len(t.recs) >= 1<<31-1 {
		t.err = fmt.Errorf("threading mail: more than %d messages in one run; ingest the rest in another run", len(t.recs))
		return t.err
	}
	fromAddr := strings.ToLower(strings.TrimSpace(m.Msg.AuthorAddr))
	var from uint64
	if fromAddr != "" {
		from = t.hash(fromAddr)
	}
	id := m.ID
	n := t.node(id)
	if first := t.nodeMsg[n]; first >= 0 {
		f := &t.recs[first]
		if f.date/int64(time.Second) == m.Date.Unix() && f.from == from && (f.flags&recFrom != 0) == (fromAddr != "") {
			return nil // another copy of a message already read (Inbox and Archive)
		}
		// a different message reusing the Message-ID
		t.dups[n]++
		id = fmt.Sprintf("%s#%d", m.ID, t.dups[n]+1)
		n = t.node(id)
	} else {
		t.nodeMsg[n] = int32(len(t.recs))
	}
	subject := strings.ToLower(ThreadTitle(m.Msg.Subject))
	rec := mailRec{date: m.Date.UnixNano(), from: from, node: n}
	if fromAddr != "" {
		rec.flags |= recFrom
	}
	if subject != "" {
		rec.subj = t.hash(subject)
		rec.flags |= recSubject
		if len(subject) >= 3 {
			rec.flags |= recLongSubj
		}
	}
	if isReplySubject(m.Msg.Subject) {
		rec.flags |= recReply
	}
	if m.DateGuessed {
		rec.flags |= recGuessed
	}
	if len(m.Refs) > 0 || m.ReplyTo != "" {
		rec.flags |= recHasRefs
	}
	sr := &spillRec{prov: m.Prov, origin: m.Origin, msg: m.Msg}
	sr.msg.Ref = id
	switch {
	case len(m.Refs) > 0:
		sr.firstRef = m.Refs[0]
	case m.ReplyTo != "":
		sr.firstRef = m.ReplyTo
	}
	for _, r := range m.Refs {
		t.union(n, t.node(r))
	}
	if m.ReplyTo != "" {
		t.union(n, t.node(m.ReplyTo))
	}
	idx := int32(len(t.recs))
	if size := int64(len(m.Msg.Text) + len(m.Msg.Subject) + 256); t.heldN+size <= SpillAfter {
		t.heldN += size
		rec.off = -1
		t.held[idx] = sr
		t.recs = append(t.recs, rec)
		return nil
	}
	if t.spill == nil {
		f, err := os.CreateTemp("", "openhuman-ingest-mail-*")
		if err != nil {
			t.err = fmt.Errorf("threading mail needs a temporary file: %w", err)
			return t.err
		}
		os.Remove(f.Name()) // unlinked: gone when closed, even after a crash
		t.spill, t.w = f, bufio.NewWriterSize(f, 1<<20)
	}
	t.buf = appendSpillRec(t.buf[:0], sr)
	if _, err := t.w.Write(t.buf); err != nil {
		t.err = fmt.Errorf("threading mail: write the temporary file: %w", err)
		return t.err
	}
	rec.off, rec.length = t.off, uint32(len(t.buf))
	t.off += int64(len(t.buf))
	t.recs = append(t.recs, rec)
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

func (t *Threader) Close() {
	if t.spill != nil {
		t.spill.Close()
		t.spill, t.w = nil, nil
	}
}

// stPerson is one participant of a subject thread.
type stPerson struct {
	st uint32
	p  uint64
}

// subjectFallback joins to a thread each reply that names no Message-ID: in time
// order, such a reply joins the latest earlier thread with the same subject in
// which its sender took part, whose latest message is within subjectWindow of it.
// References that look like Message-IDs are authoritative, known or not; only a
// reply that names none is threaded by its subject. The participants of a thread
// matter only for subjects such a reply carries (few, often none): only messages
// with those subjects are read back for them, and without any such reply nothing
// is done.
func (t *Threader) subjectFallback() error {
	asked := map[uint64]bool{}
	for i := range t.recs {
		if m := &t.recs[i]; m.flags&(recReply|recHasRefs|recLongSubj) == recReply|recLongSubj {
			asked[m.subj] = true
		}
	}
	if len(asked) == 0 {
		return nil
	}
	order := make([]int32, len(t.recs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		return cmpInt64(t.recs[a].date, t.recs[b].date)
	})
	type subjThread struct {
		node uint32
		last int64
	}
	var threads []subjThread
	bySubject := map[uint64][]uint32{}
	people := map[stPerson]struct{}{}
	window := int64(subjectWindow)
	for _, i := range order {
		m := &t.recs[i]
		if m.flags&(recReply|recHasRefs|recLongSubj) == recReply|recLongSubj {
			cands := bySubject[m.subj]
			for k := len(cands) - 1; k >= 0; k-- {
				c := &threads[cands[k]]
				if m.date-c.last > window || c.last-m.date > window {
					continue
				}
				// the reply's sender took part in the thread (a list address
				// that every message shares is not enough)
				if m.flags&recFrom != 0 {
					if _, ok := people[stPerson{cands[k], m.from}]; ok {
						t.union(m.node, c.node)
						break
					}
				}
			}
		}
		if m.flags&recSubject == 0 || !asked[m.subj] {
			continue // no reply looks for threads of this subject
		}
		st := noNode
		root := t.find(m.node)
		for _, c := range bySubject[m.subj] {
			if t.find(threads[c].node) == root {
				st = c
			}
		}
		if st == noNode {
			st = uint32(len(threads))
			threads = append(threads, subjThread{node: m.node, last: m.date})
			bySubject[m.subj] = append(bySubject[m.subj], st)
		}
		if m.date > threads[st].last {
			threads[st].last = m.date
		}
		sr, err := t.peek(i)
		if err != nil {
			return err
		}
		for _, p := range participants(&sr.msg) {
			people[stPerson{st, t.hash(p)}] = struct{}{}
		}
	}
	return nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// EachThread groups the collected messages into threads and calls fn with each
// thread's source, one at a time (until fn returns false), threads ordered by their first message: messages
// joined by References and In-Reply-To (only values that look like Message-IDs),
// then by subject (see subjectFallback). Duplicate copies (same Message-ID, date and
// sender) keep the first read; a different message reusing a Message-ID is kept
// under a suffixed ref. A thread that cannot be read back from the spill file is
// passed to fail with the origin of its first message. The threader holds nothing
// of the run once it returns.
func (t *Threader) EachThread(fn func(memtree.SourceInput) bool, fail func(origin, root string, err error)) {
	if t.err == nil && t.w != nil {
		if err := t.w.Flush(); err != nil {
			t.err = fmt.Errorf("threading mail: write the temporary file: %w", err)
		}
	}
	if len(t.recs) == 0 {
		return
	}
	if err := t.subjectFallback(); err != nil {
		// Threads still form by their references; replies without any stay apart.
		fail("", "(subjects)", err)
	}
	// group[i]: the first message (by date, then reading order) of i's thread.
	first := make([]int32, len(t.parent))
	for i := range first {
		first[i] = -1
	}
	group := make([]int32, len(t.recs))
	for i := range t.recs {
		r := t.find(t.recs[i].node)
		f := first[r]
		if f < 0 || t.recs[i].date < t.recs[f].date {
			first[r] = int32(i)
		}
	}
	for i := range t.recs {
		group[i] = first[t.find(t.recs[i].node)]
	}
	// The union-find is not needed any more.
	first, t.nodes, t.parent, t.nodeMsg, t.dups = nil, nil, nil, nil, nil
	perm := make([]int32, len(t.recs))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		ga, gb := group[a], group[b]
		if ga != gb {
			if c := cmpInt64(t.recs[ga].date, t.recs[gb].date); c != 0 {
				return c
			}
			return int(ga - gb)
		}
		if c := cmpInt64(t.recs[a].date, t.recs[b].date); c != 0 {
			return c
		}
		return int(a - b)
	})
	var msgs []int32
	for k := 0; k < len(perm); {
		j := k
		for j < len(perm) && group[perm[j]] == group[perm[k]] {
			j++
		}
		msgs = append(msgs[:0], perm[k:j]...)
		k = j
		src, root, err := t.source(msgs)
		if err != nil {
			fail(src.Origin, root, err)
			continue
		}
		if !fn(src) {
			break
		}
	}
	t.recs, t.held = nil, nil
}

// read returns message i from memory (forgetting it there) or the spill file.
func (t *Threader) read(i int32) (*spillRec, error) {
	sr, err := t.peek(i)
	if t.recs[i].off < 0 {
		delete(t.held, i)
	}
	return sr, err
}

// peek returns message i from memory or the spill file.
func (t *Threader) peek(i int32) (*spillRec, error) {
	rec := &t.recs[i]
	if rec.off < 0 {
		return t.held[i], nil
	}
	if t.err != nil {
		return nil, t.err
	}
	if cap(t.buf) < int(rec.length) {
		t.buf = make([]byte, rec.length)
	}
	b := t.buf[:rec.length]
	if _, err := t.spill.ReadAt(b, rec.off); err != nil {
		return nil, fmt.Errorf("threading mail: read the temporary file back: %w", err)
	}
	sr, err := decodeSpillRec(b)
	if err != nil {
		return nil, fmt.Errorf("threading mail: decode a message of the temporary file: %w", err)
	}
	return sr, nil
}

// source reads a thread's messages (sorted by date) back and builds its source:
// SourceID "email:<root>", titled by the root's subject. The root is the first
// message that names no other, else the oldest ancestor the first message names.
// A source whose messages' dates were guessed carries the tag "date-guessed".
func (t *Threader) source(msgs []int32) (memtree.SourceInput, string, error) {
	src := memtree.SourceInput{Kind: memtree.KindEmail}
	root, rootSet := "", false
	guessed := false
	var firstRef string
	for k, i := range msgs {
		sr, err := t.read(i)
		if err != nil {
			return src, root, err
		}
		rec := &t.recs[i]
		if k == 0 {
			src.Provider, src.Origin, firstRef = sr.prov, sr.origin, sr.firstRef
		}
		if !rootSet && rec.flags&recHasRefs == 0 {
			root, rootSet = sr.msg.Ref, true
		}
		guessed = guessed || rec.flags&recGuessed != 0
		src.Messages = append(src.Messages, sr.msg)
	}
	if !rootSet {
		// The root is not present: the oldest ancestor named by the earliest message.
		root = firstRef
		if root == "" {
			root = src.Messages[0].Ref
		}
	}
	src.SourceID = "email:" + root
	for _, m := range src.Messages {
		if m.Ref == root {
			src.Title = ThreadTitle(m.Subject)
			break
		}
	}
	if src.Title == "" {
		src.Title = ThreadTitle(src.Messages[0].Subject)
	}
	if src.Title == "" {
		src.Title = "(no subject)"
	}
	if guessed {
		src.Tags = append(src.Tags, "date-guessed")
	}
	return src, root, nil
}
