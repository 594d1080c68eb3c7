// Package imapsync copies an IMAP mailbox into a local Maildir mirror, read-only
// on the server by construction: the mailbox is opened with EXAMINE, messages are
// fetched with BODY.PEEK[] (which sets no \Seen flag), and no command that
// changes the server (STORE, EXPUNGE, COPY, APPEND) is ever sent. The mirror is
// what ingest and watch read; the memory tree keys mail by Message-ID, so a
// mailbox read again (a changed UIDVALIDITY) stores nothing twice.
//
// The mirror remembers where it is by its file names alone,
// "<INTERNALDATE>.V<UIDVALIDITY>U<UID>.imap" in cur/: the highest UID of the
// current UIDVALIDITY is where the next sync starts. A message is written to
// tmp/ and renamed into cur/ once whole, so a connection dropped mid-fetch (or a
// kill) leaves no partial message, and the next sync resumes after the last one
// kept. Messages the server no longer has are removed from the mirror (the watch
// loop then forgets them).
package imapsync

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-imap"
	"github.com/emersion/go-imap/client"
)

// Target is one mailbox: imaps://USER@HOST[:PORT]/MAILBOX (TLS), or
// imap://USER@HOST[:PORT]/MAILBOX (STARTTLS; plaintext only with Insecure, and
// only to a loopback address).
type Target struct {
	User, Host, Port, Mailbox string
	TLS                       bool // imaps: TLS from the first byte
	Insecure                  bool
}

// ParseURL reads an imap:// or imaps:// URL. The mailbox defaults to INBOX. A
// password in the URL is refused: it would end up in shell history and logs.
func ParseURL(s string) (Target, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Target{}, fmt.Errorf("%q: not a URL: %w", s, err)
	}
	var t Target
	switch u.Scheme {
	case "imaps":
		t.TLS, t.Port = true, "993"
	case "imap":
		t.Port = "143"
	default:
		return Target{}, fmt.Errorf("%q: use imaps://USER@HOST[:PORT]/MAILBOX (or imap:// for STARTTLS)", s)
	}
	if u.User == nil || u.User.Username() == "" {
		return Target{}, fmt.Errorf("%q: name the user: imaps://USER@HOST/MAILBOX", s)
	}
	if _, ok := u.User.Password(); ok {
		return Target{}, fmt.Errorf("%q: holds a password; give it in OPENHUMAN_IMAP_PASSWORD, --password-file or ~/.netrc instead", redact(u))
	}
	t.User, t.Host = u.User.Username(), u.Hostname()
	if t.Host == "" {
		return Target{}, fmt.Errorf("%q: no host", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("%q: bad port %q", s, p)
		}
		t.Port = p
	}
	t.Mailbox = strings.TrimPrefix(u.Path, "/")
	if t.Mailbox == "" {
		t.Mailbox = "INBOX"
	}
	return t, nil
}

func redact(u *url.URL) string {
	c := *u
	c.User = url.User(u.User.Username())
	return c.String()
}

// String is the target's URL (no password: it never holds one).
func (t Target) String() string {
	scheme := "imap"
	if t.TLS {
		scheme = "imaps"
	}
	u := url.URL{Scheme: scheme, User: url.User(t.User), Host: net.JoinHostPort(t.Host, t.Port), Path: "/" + t.Mailbox}
	return u.String()
}

// Addr is host:port.
func (t Target) Addr() string { return net.JoinHostPort(t.Host, t.Port) }

// MirrorDir is where the mailbox's mirror lives under base (one folder per
// account and mailbox; names escaped so that none is hidden or climbs out).
func (t Target) MirrorDir(base string) string {
	acct := url.PathEscape(t.User + "@" + t.Host)
	if !(t.TLS && t.Port == "993") && !(!t.TLS && t.Port == "143") {
		acct += "_" + t.Port
	}
	box := strings.ReplaceAll(url.PathEscape(t.Mailbox), ".", "%2E")
	return filepath.Join(base, acct, box)
}

// isLoopback reports whether host is a loopback address (or localhost).
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Result says what one Sync did.
type Result struct {
	UIDValidity uint32
	Fetched     int // messages written to the mirror
	Removed     int // mirror messages the server no longer has
	OnServer    int
	// Revalidated says the mailbox's UIDVALIDITY changed: it was read again whole.
	Revalidated bool
	Seconds     float64
}

// Options tune Sync.
type Options struct {
	Password string
	// Dial connects (net.Dialer by default); tests put a proxy here.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLSConfig for imaps and STARTTLS (ServerName is set from the target).
	TLSConfig *tls.Config
	Log       *slog.Logger
	// Timeout bounds each network read and write (60 s by default).
	Timeout time.Duration
}

var reName = regexp.MustCompile(`^(\d+)\.V(\d+)U(\d+)\.imap$`)

// mirror lists the messages of the mirror: uid by uidvalidity, with file names.
type mirrorFile struct {
	validity, uid uint32
	name          string
}

func readMirror(dir string) ([]mirrorFile, error) {
	es, err := os.ReadDir(filepath.Join(dir, "cur"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []mirrorFile
	for _, e := range es {
		m := reName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		v, _ := strconv.ParseUint(m[2], 10, 32)
		u, _ := strconv.ParseUint(m[3], 10, 32)
		out = append(out, mirrorFile{validity: uint32(v), uid: uint32(u), name: e.Name()})
	}
	return out, nil
}

// Connect opens an authenticated connection to the target: TLS (imaps or
// STARTTLS) unless Insecure, which is refused for anything but a loopback address.
func Connect(ctx context.Context, t Target, opt Options) (*client.Client, error) {
	c, _, err := connect(ctx, t, opt)
	return c, err
}

// connect is Connect, also returning the guard on the server's byte stream
// (guard.go), whose reason explains a connection it ended.
func connect(ctx context.Context, t Target, opt Options) (*client.Client, *guardedConn, error) {
	if t.Insecure && !isLoopback(t.Host) {
		return nil, nil, fmt.Errorf("imap %s: --insecure allows plaintext only to a loopback address (127.0.0.1, ::1, localhost); %s is not one", t, t.Host)
	}
	if t.Insecure && t.TLS {
		return nil, nil, fmt.Errorf("imap %s: --insecure is for imap:// (plaintext) on loopback; imaps is already encrypted", t)
	}
	dial := opt.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second}
		dial = d.DialContext
	}
	conn, err := dial(ctx, "tcp", t.Addr())
	if err != nil {
		return nil, nil, fmt.Errorf("imap %s: connect: %w", t, err)
	}
	timeout := opt.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	// End the connection when ctx ends, so that no read blocks a shutdown (the
	// greeting's included: go-imap waits for it with no deadline of its own).
	raw := conn
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	fail := func(err error) (*client.Client, *guardedConn, error) {
		stop()
		raw.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, context.Cause(ctx))
		}
		return nil, nil, err
	}
	// The greeting (and TLS handshake) must come within the timeout.
	conn.SetDeadline(time.Now().Add(timeout))
	tc := &tls.Config{ServerName: t.Host, MinVersion: tls.VersionTLS12}
	if opt.TLSConfig != nil {
		tc = opt.TLSConfig.Clone()
		tc.ServerName = t.Host
	}
	if t.TLS {
		tconn := tls.Client(conn, tc)
		if err := tconn.HandshakeContext(ctx); err != nil {
			return fail(fmt.Errorf("imap %s: TLS: %w", t, err))
		}
		conn = tconn
	}
	guard := newGuardedConn(conn)
	c, err := client.New(guard)
	if err != nil {
		if gerr := guard.failed(); gerr != nil {
			err = gerr
		}
		return fail(fmt.Errorf("imap %s: greeting: %w", t, err))
	}
	// go-imap logs a broken connection on its own; the error reaches the caller
	// anyway, so its line goes to the debug log, not to stderr.
	c.ErrorLog = slogLogger{opt.Log}
	c.Timeout = timeout
	go func() { <-c.LoggedOut(); stop() }()
	if !t.TLS && !t.Insecure {
		ok, err := c.SupportStartTLS()
		if err != nil {
			c.Terminate()
			return nil, nil, fmt.Errorf("imap %s: capabilities: %w", t, err)
		}
		if !ok {
			c.Terminate()
			return nil, nil, fmt.Errorf("imap %s: the server offers no STARTTLS: use imaps://, or --insecure for a server on this machine", t)
		}
		// go-imap reads through TLS above the guard from here on: the guard
		// cannot read IMAP in TLS records, so it stands aside (imaps:// and
		// loopback plaintext keep it).
		guard.stop()
		if err := c.StartTLS(tc); err != nil {
			c.Terminate()
			return nil, nil, fmt.Errorf("imap %s: STARTTLS: %w", t, err)
		}
	}
	if err := c.Login(t.User, opt.Password); err != nil {
		c.Terminate()
		return nil, nil, fmt.Errorf("imap %s: login as %s refused: %w (Gmail and Fastmail need an app password)", t, t.User, err)
	}
	return c, guard, nil
}

// Sync brings the mirror in dir up to date with the mailbox: it fetches the
// messages after the highest UID the mirror holds (all of them when the
// mailbox's UIDVALIDITY changed, then drops the old ones), and removes those
// the server no longer has.
func Sync(ctx context.Context, t Target, dir string, opt Options) (res Result, err error) {
	start := time.Now()
	log := opt.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, sub := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return res, fmt.Errorf("imap %s: mirror: %w", t, err)
		}
	}
	have, err := readMirror(dir)
	if err != nil {
		return res, fmt.Errorf("imap %s: mirror %s: %w", t, dir, err)
	}
	c, guard, err := connect(ctx, t, opt)
	if err != nil {
		return res, err
	}
	defer c.Logout()
	defer func() {
		// go-imap reports a connection the guard ended as closed: say why.
		if gerr := guard.failed(); err != nil && gerr != nil {
			err = fmt.Errorf("%w: %w", err, gerr)
		}
	}()
	mbox, err := c.Select(t.Mailbox, true) // EXAMINE: the server changes nothing
	if err != nil {
		return res, fmt.Errorf("imap %s: EXAMINE %q: %w", t, t.Mailbox, err)
	}
	res.UIDValidity = mbox.UidValidity
	res.OnServer = int(mbox.Messages)
	var last uint32
	stale := false
	for _, f := range have {
		if f.validity == mbox.UidValidity {
			last = max(last, f.uid)
		} else {
			stale = true
		}
	}
	res.Revalidated = stale && len(have) > 0
	if mbox.Messages > 0 {
		n, err := fetchAfter(ctx, c, t, dir, mbox.UidValidity, last, log)
		res.Fetched = n
		if err != nil {
			res.Seconds = time.Since(start).Seconds()
			return res, err
		}
	}
	have, err = readMirror(dir)
	if err != nil {
		return res, fmt.Errorf("imap %s: mirror %s: %w", t, dir, err)
	}
	current := 0
	for _, f := range have {
		if f.validity == mbox.UidValidity {
			current++
		}
	}
	if current == int(mbox.Messages) && current == len(have) {
		// The mirror holds as many messages of this UIDVALIDITY as the mailbox, and
		// no others: nothing was deleted on the server (UIDs are never reused), so
		// the UID list need not be read.
		res.Seconds = time.Since(start).Seconds()
		return res, nil
	}
	// What the server holds now, to drop from the mirror what it no longer has
	// (and, after a UIDVALIDITY change, the whole old generation).
	onServer := map[uint32]bool{}
	if mbox.Messages > 0 {
		uids, err := c.UidSearch(&imap.SearchCriteria{})
		if err != nil {
			return res, fmt.Errorf("imap %s: UID SEARCH ALL: %w", t, err)
		}
		for _, u := range uids {
			onServer[u] = true
		}
	}
	for _, f := range have {
		if f.validity == mbox.UidValidity && onServer[f.uid] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, "cur", f.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("imap %s: mirror: %w", t, err)
		}
		res.Removed++
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// fetchBatch is how many messages one UID FETCH asks for: a dropped connection
// loses at most the batch's messages not yet written, and memory holds at most
// the batch's bodies in go-imap's channel.
const fetchBatch = 200

// fetchAfter fetches the messages with a UID above last into the mirror, in UID
// order and batches of fetchBatch, each written whole before the next.
func fetchAfter(ctx context.Context, c *client.Client, t Target, dir string, validity, last uint32, log *slog.Logger) (int, error) {
	// UID SEARCH UID last+1:* lists the new messages; "*" is the highest UID even
	// when it is not above last, so that one is filtered out.
	found, err := c.UidSearch(&imap.SearchCriteria{Uid: uidsAbove(last)})
	if err != nil {
		return 0, fmt.Errorf("imap %s: UID SEARCH: %w", t, err)
	}
	var uids []uint32
	for _, u := range found {
		if u > last {
			uids = append(uids, u)
		}
	}
	slices.Sort(uids)
	n := 0
	section := &imap.BodySectionName{Peek: true} // BODY.PEEK[]: \Seen stays as it was
	items := []imap.FetchItem{imap.FetchUid, imap.FetchInternalDate, section.FetchItem()}
	for len(uids) > 0 {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		batch := uids[:min(fetchBatch, len(uids))]
		uids = uids[len(batch):]
		batch, err := withinBound(c, t, batch, log)
		if err != nil {
			return n, err
		}
		if len(batch) == 0 {
			continue
		}
		set := new(imap.SeqSet)
		set.AddNum(batch...)
		want := map[uint32]bool{}
		for _, u := range batch {
			want[u] = true
		}
		ch := make(chan *imap.Message, 16)
		done := make(chan error, 1)
		go func() { done <- c.UidFetch(set, items, ch) }()
		var werr error
		for m := range ch {
			if werr != nil || !want[m.Uid] {
				continue
			}
			delete(want, m.Uid)
			body := m.GetBody(section)
			if body == nil {
				werr = fmt.Errorf("imap %s: UID %d: the server sent no body", t, m.Uid)
				continue
			}
			if err := writeMessage(dir, validity, m.Uid, m.InternalDate, body); err != nil {
				werr = fmt.Errorf("imap %s: UID %d: %w", t, m.Uid, err)
				continue
			}
			n++
		}
		if err := <-done; err != nil {
			return n, fmt.Errorf("imap %s: UID FETCH: %w (%d messages kept; the next sync resumes after them)", t, err, n)
		}
		if werr != nil {
			return n, werr
		}
	}
	return n, nil
}

// withinBound keeps the UIDs of batch whose RFC822.SIZE is within
// MaxMessageBytes, naming each larger one on the log (ingest would refuse it,
// and go-imap would hold it whole in memory).
func withinBound(c *client.Client, t Target, batch []uint32, log *slog.Logger) ([]uint32, error) {
	set := new(imap.SeqSet)
	set.AddNum(batch...)
	ch := make(chan *imap.Message, 16)
	done := make(chan error, 1)
	go func() { done <- c.UidFetch(set, []imap.FetchItem{imap.FetchUid, imap.FetchRFC822Size}, ch) }()
	size := map[uint32]uint32{}
	for m := range ch {
		size[m.Uid] = m.Size
	}
	if err := <-done; err != nil {
		return nil, fmt.Errorf("imap %s: UID FETCH RFC822.SIZE: %w", t, err)
	}
	var keep []uint32
	for _, u := range batch {
		if size[u] > MaxMessageBytes {
			log.Warn("imap: message skipped: over the bound for one message", "mailbox", t.String(), "uid", u, "bytes", size[u], "bound_mib", MaxMessageBytes>>20)
			continue
		}
		keep = append(keep, u)
	}
	return keep, nil
}

func uidsAbove(u uint32) *imap.SeqSet {
	s := new(imap.SeqSet)
	s.AddRange(u+1, 0)
	return s
}

// writeMessage writes one message into the mirror: tmp/ first, then renamed into
// cur/ (its file time the message's INTERNALDATE), so cur/ never holds part of one.
func writeMessage(dir string, validity, uid uint32, date time.Time, body io.Reader) error {
	if date.IsZero() {
		date = time.Now()
	}
	name := fmt.Sprintf("%d.V%dU%d.imap", date.Unix(), validity, uid)
	tmp := filepath.Join(dir, "tmp", name)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	_ = os.Chtimes(tmp, date, date)
	return os.Rename(tmp, filepath.Join(dir, "cur", name))
}

// slogLogger is go-imap's error logger on slog (debug level).
type slogLogger struct{ log *slog.Logger }

func (l slogLogger) Printf(format string, v ...interface{}) {
	if l.log != nil {
		l.log.Debug("imap: " + fmt.Sprintf(format, v...))
	}
}

func (l slogLogger) Println(v ...interface{}) {
	if l.log != nil {
		l.log.Debug("imap: " + strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
	}
}
