package mail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// Kinds of the mail readers here (Options.Kind, --kind).
const (
	KindMbox    = "mbox"
	KindEML     = "eml"
	KindMaildir = "maildir"
)

// MboxReader reads mbox files (see readMbox).
type MboxReader struct{}

func (MboxReader) Kind() string { return KindMbox }

func (MboxReader) Detect(p string, dir bool, head []byte) bool {
	if dir {
		return false
	}
	switch strings.ToLower(filepath.Ext(p)) {
	case ".mbox", ".mbx":
		return true
	case ".eml":
		return false
	}
	head = bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF})
	head = bytes.TrimLeft(head, "\r\n")
	first, rest, _ := bytes.Cut(head, []byte("\n"))
	second, _, _ := bytes.Cut(rest, []byte("\n"))
	return isSeparator(first, second, true)
}

func (MboxReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	mtime := readkit.ModTime(in.Path)
	pool := newMailPool(out, rep)
	err := readMbox(in.Path, func(m mboxMessage) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		where := fmt.Sprintf("message %d (byte %d)", m.Num, m.Offset)
		if m.err != nil {
			pool.submit(&mailJob{path: in.Path, where: where, cut: m.err})
			return nil
		}
		pool.submit(&mailJob{path: in.Path, where: where, raw: m.Raw, dates: mailDates{envelope: m.envDate, File: mtime}, prov: KindMbox})
		return nil
	})
	pool.close()
	switch {
	case errors.Is(err, readkit.ErrEmpty):
		rep.Warn(in.Path, "", "empty mbox: nothing to ingest")
	case err != nil && ctx.Err() != nil:
	case err != nil:
		rep.Fail(readkit.FileError{Path: in.Path, Err: err})
	}
}

// emitMail parses one raw message and hands it to out; what cannot be kept is
// reported.
func emitMail(path, where string, raw []byte, dates mailDates, prov string, out readkit.Output, rep *readkit.Report) {
	j := &mailJob{path: path, where: where, raw: raw, dates: dates, prov: prov}
	j.parse(rep.Times)
	j.deliver(out, rep)
}

// mailJob is one raw message to parse and hand on.
type mailJob struct {
	path, where string
	raw         []byte
	dates       mailDates
	prov        string
	cut         error // the message could not be cut out of its file: report it only
	pm          *parsedMail
	err         error
	size        int64         // what the job counts against its pool's budget
	done        chan struct{} // closed once parsed
}

func (j *mailJob) parse(times *readkit.RunTimes) {
	if j.cut != nil {
		return
	}
	t0 := time.Now()
	j.pm, j.err = parseMail(j.raw, j.dates)
	j.raw = nil
	times.Add(&times.Parse, time.Since(t0))
	if j.pm != nil {
		times.Add(&times.Clean, j.pm.clean)
	}
}

// deliver reports what parse found and hands the message to out.
func (j *mailJob) deliver(out readkit.Output, rep *readkit.Report) {
	path, where := j.path, j.where
	if j.cut != nil {
		rep.Fail(readkit.FileError{Path: path, Where: where, Err: j.cut})
		return
	}
	if j.err != nil {
		rep.Fail(readkit.FileError{Path: path, Where: where, Err: j.err})
		return
	}
	pm := j.pm
	for _, n := range pm.notes {
		rep.Log.Debug("ingest: "+n, "path", path, "where", where)
	}
	for _, w := range pm.warnings {
		rep.Warn(path, where, w)
	}
	if pm.bodyErr != nil {
		rep.Fail(readkit.FileError{Path: path, Where: where, Err: fmt.Errorf("message %s kept in part: %w", pm.M.ID, pm.bodyErr)})
	}
	pm.M.Prov = j.prov
	pm.M.Origin = path
	if where != "" {
		pm.M.Origin = path + " " + where
	}
	out.Mail(pm.M)
}

// mailPoolBytes bounds the raw messages a mailPool holds (queued, parsing, parsed
// and waiting for their turn).
const mailPoolBytes = 8 << 20

// mailPool parses raw messages on one goroutine per core and hands them to out in
// the order they were submitted, from one goroutine, so that a large mbox or
// Maildir is parsed on every core while threading sees the messages in file order
// (which keeps the first of two copies of a message, as a sequential read does).
type mailPool struct {
	out     readkit.Output
	rep     *readkit.Report
	bud     *readkit.Budget
	work    chan *mailJob
	order   chan *mailJob
	workers sync.WaitGroup
	done    chan struct{}
}

func newMailPool(out readkit.Output, rep *readkit.Report) *mailPool {
	n := runtime.GOMAXPROCS(0)
	p := &mailPool{out: out, rep: rep, bud: readkit.NewBudget(mailPoolBytes),
		work: make(chan *mailJob, 4*n), order: make(chan *mailJob, 16*n), done: make(chan struct{})}
	for range n {
		p.workers.Add(1)
		go func() {
			defer p.workers.Done()
			for j := range p.work {
				j.parse(rep.Times)
				close(j.done)
			}
		}()
	}
	go func() {
		defer close(p.done)
		for j := range p.order {
			<-j.done
			j.deliver(p.out, p.rep)
			p.bud.Release(j.size)
		}
	}()
	return p
}

// submit queues one message; it blocks while the pool is full.
func (p *mailPool) submit(j *mailJob) {
	j.done = make(chan struct{})
	j.size = int64(len(j.raw) + len(j.path) + 256)
	p.bud.Acquire(j.size)
	p.order <- j
	p.work <- j
}

// close waits until every submitted message is handed on.
func (p *mailPool) close() {
	close(p.work)
	close(p.order)
	p.workers.Wait()
	<-p.done
}

// EMLReader reads files that hold one message: .eml, and files of any name whose
// first lines are a mail header block (spool and Maildir-like folders, test suites'
// "message.txt").
type EMLReader struct{}

func (EMLReader) Kind() string { return KindEML }

// Detect claims .eml files and any file, whatever its name, that starts with a
// mail header block (Maildir's "1220863087.12663_23.mindcrime", MH's "17").
func (EMLReader) Detect(p string, dir bool, head []byte) bool {
	if dir {
		return false
	}
	switch strings.ToLower(filepath.Ext(p)) {
	case ".eml", ".msg822":
		return !isOLEHead(head)
	}
	return looksLikeMailHeader(head)
}

// firstLineIsHeader reports whether the first line of head (the second after an
// mbox "From " line) starts with a header field name and its colon.
func firstLineIsHeader(head []byte) bool {
	line, rest, _ := bytes.Cut(head, []byte("\n"))
	if bytes.HasPrefix(line, []byte("From ")) {
		line, _, _ = bytes.Cut(rest, []byte("\n"))
	}
	i := bytes.IndexByte(line, ':')
	if i <= 0 || i > 76 {
		return false
	}
	for _, c := range line[:i] {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// isOLEHead reports whether a file starts as an OLE compound file (Outlook .msg).
func isOLEHead(head []byte) bool {
	return bytes.HasPrefix(head, []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"))
}

// mailHeaderMarkers are fields only mail headers carry (a note with "Date:" and
// "Title:" lines is not mail).
var mailHeaderMarkers = []string{"from", "message-id", "received", "return-path", "mime-version", "delivered-to", "in-reply-to", "references"}

// looksLikeMailHeader reports whether head starts with an RFC 5322 header block
// (after a BOM and an optional mbox envelope line) of at least two fields, one of
// them a field only mail carries.
func looksLikeMailHeader(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF})
	if len(head) == 0 || !(head[0] >= 'A' && head[0] <= 'Z' || head[0] >= 'a' && head[0] <= 'z') {
		return false // a header name starts every mail; most other files fail here
	}
	if !firstLineIsHeader(head) {
		return false // cheap: documents and chats fail here, before the split below
	}
	lines := strings.Split(string(readkit.NormalizeNewlines(head)), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "From ") {
		lines = lines[1:]
	}
	fields, marked := 0, false
	for i, l := range lines {
		if l == "" {
			break
		}
		if l[0] == ' ' || l[0] == '\t' {
			if i == 0 {
				return false
			}
			continue
		}
		if !reHeaderLine.MatchString(l) {
			if i == 0 {
				return false
			}
			if i == len(lines)-1 {
				break // cut by the head's end
			}
			continue // a broken fold
		}
		fields++
		key := strings.ToLower(l[:strings.IndexByte(l, ':')])
		for _, m := range mailHeaderMarkers {
			if key == m {
				marked = true
			}
		}
	}
	return fields >= 2 && marked
}

func (EMLReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	readOneMail(in, KindEML, out, rep)
}

// readOneMail reads a file that holds one message. A file that is no mail text
// (an Outlook .msg, binary) fails with what it is, never with its bytes.
func readOneMail(in readkit.Input, prov string, out readkit.Output, rep *readkit.Report) {
	b, err := readkit.ReadFileLimited(in.Path)
	if err != nil {
		rep.Fail(readkit.FileError{Path: in.Path, Err: err})
		return
	}
	if head := b[:min(len(b), readkit.HeadBytes)]; !looksLikeMailHeader(head) && !readkit.IsText(head) {
		rep.Fail(readkit.FileError{Path: in.Path, Err: fmt.Errorf("not mail text: %s", readkit.UnknownReason(in.Path, head))})
		return
	}
	emitMail(in.Path, "", b, mailDates{envelope: maildirTime(filepath.Base(in.Path)), File: readkit.ModTime(in.Path), envelopeIs: "the delivery time of its file name"}, prov, out, rep)
}

// MaildirReader reads a Maildir: the messages of cur/ and new/ (tmp/ holds
// deliveries in progress, not read), and its Maildir++ subfolders (".Sent/cur").
type MaildirReader struct{}

func (MaildirReader) Kind() string { return KindMaildir }

func (MaildirReader) Detect(p string, dir bool, _ []byte) bool {
	return dir && IsMaildir(p)
}

// IsMaildir reports whether p is a Maildir: its cur/ or new/ holds mail (the
// first files there start with a mail header block, whatever their names), or it
// has two of cur/, new/ and tmp/ (an empty Maildir). Copies often keep only cur/:
// git, zip files and backups drop empty folders.
func IsMaildir(p string) bool {
	n := 0
	for _, sub := range []string{"cur", "new", "tmp"} {
		if st, err := archive.Lstat(filepath.Join(p, sub)); err == nil && st.IsDir() {
			n++
			if sub != "tmp" && holdsMail(filepath.Join(p, sub)) {
				return true
			}
		}
	}
	return n >= 2
}

// holdsMail reports whether the first regular files of dir (up to three, hidden
// ones aside) include a mail message.
func holdsMail(dir string) bool {
	es, err := archive.ReadDir(dir)
	if err != nil {
		return false
	}
	seen := 0
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		if looksLikeMailHeader(readkit.ReadHead(filepath.Join(dir, e.Name()))) {
			return true
		}
		if seen++; seen == 3 {
			return false
		}
	}
	return false
}

// Read reads a Maildir folder, or one message file (--kind maildir given on a
// file, or on a folder of message files such as a lone cur/).
func (MaildirReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	if st, err := archive.Stat(in.Path); err == nil && !st.IsDir() {
		readOneMail(in, KindMaildir, out, rep)
		return
	}
	pool := newMailPool(out, rep)
	readMaildir(ctx, in.Path, 0, pool, rep)
	pool.close()
}

func readMaildir(ctx context.Context, dir string, depth int, pool *mailPool, rep *readkit.Report) {
	for _, sub := range []string{"cur", "new"} {
		d := filepath.Join(dir, sub)
		entries, err := archive.ReadDir(d)
		if err != nil {
			if !os.IsNotExist(err) {
				rep.Fail(readkit.FileError{Path: d, Err: fmt.Errorf("cannot list Maildir folder: %w", err)})
			}
			continue
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		for _, e := range entries {
			if ctx.Err() != nil {
				return
			}
			p := filepath.Join(d, e.Name())
			switch {
			case strings.HasPrefix(e.Name(), "."):
				rep.Skip(p, readkit.ReasonHiddenFile)
				continue
			case e.Type()&os.ModeSymlink != 0:
				rep.Skip(p, readkit.ReasonSymlink)
				continue
			case !e.Type().IsRegular():
				rep.Skip(p, readkit.ReasonNotRegular)
				continue
			}
			submitMaildirFile(p, e.Name(), pool, rep)
		}
	}
	if entries, err := archive.ReadDir(filepath.Join(dir, "tmp")); err == nil && len(entries) > 0 {
		rep.Skip(filepath.Join(dir, "tmp"), "Maildir tmp/: deliveries in progress, not read")
	}
	if depth >= readkit.MaxWalkDepth {
		return
	}
	readMaildirExtras(ctx, dir, depth, true, pool, rep)
}

// readMaildirExtras reads what a Maildir's top folder holds beside cur/, new/
// and tmp/: Maildir++ subfolders (".Sent", ".Archive.2024") and Dovecot's fs
// layout ("Sent/"), each a Maildir; mail files kept at the top or in plain
// subfolders (mail tools' test trees and hand-made copies put them there); and
// names everything else (dovecot-uidlist, maildirfolder, subscriptions, indexes)
// as not read.
func readMaildirExtras(ctx context.Context, dir string, depth int, top bool, pool *mailPool, rep *readkit.Report) {
	entries, _ := archive.ReadDir(dir)
	for _, e := range entries {
		if ctx.Err() != nil {
			return
		}
		name, p := e.Name(), filepath.Join(dir, e.Name())
		switch {
		case top && (name == "cur" || name == "new" || name == "tmp"):
		case e.Type()&os.ModeSymlink != 0:
			rep.Skip(p, readkit.ReasonSymlink)
		case e.IsDir() && IsMaildir(p):
			readMaildir(ctx, p, depth+1, pool, rep)
		case e.IsDir() && depth < readkit.MaxWalkDepth:
			readMaildirExtras(ctx, p, depth+1, false, pool, rep)
		case e.Type().IsRegular() && looksLikeMailHeader(readkit.ReadHead(p)):
			submitMaildirFile(p, name, pool, rep)
		case !e.Type().IsRegular() && !e.IsDir():
			rep.Skip(p, readkit.ReasonNotRegular)
		default:
			rep.Skip(p, ReasonMaildirMeta)
		}
	}
}

// submitMaildirFile hands one message file of a Maildir to the pool, dated by
// its file name's delivery time when its Date header cannot date it.
func submitMaildirFile(p, name string, pool *mailPool, rep *readkit.Report) {
	rep.File()
	b, err := readkit.ReadFileLimited(p)
	if err != nil {
		pool.submit(&mailJob{path: p, cut: err})
		return
	}
	pool.submit(&mailJob{path: p, raw: b, dates: mailDates{envelope: maildirTime(name), File: readkit.ModTime(p), envelopeIs: "the delivery time of its file name"}, prov: KindMaildir})
}

// ReasonMaildirMeta is the skip reason of what a Maildir's top folder holds
// beside its messages.
const ReasonMaildirMeta = "Maildir metadata (index, uid list, subscriptions) or a folder without mail: not read"

// maildirTime reads the delivery time a Maildir file name starts with
// ("1700000000.M1P2.host:2,S").
func maildirTime(name string) time.Time {
	digits := name
	if i := strings.IndexFunc(name, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = name[:i]
	}
	if len(digits) < 9 || len(digits) > 10 {
		return time.Time{}
	}
	sec, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}
