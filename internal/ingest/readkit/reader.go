package readkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// A reader reads one input format. The runner walks the paths named on the command
// line, asks the readers in order whether they recognise each file or folder, and
// hands it to the first that does (or to the one --kind names). A reader streams
// what it reads to an output as it goes and reports every problem; it never holds
// more of its input than one source needs.
type Reader interface {
	// Kind is the --kind name that forces this reader ("mbox", "slack", ...).
	Kind() string
	// Detect reports whether the reader reads p. dir says p is a folder; head holds
	// the first bytes of a file (up to HeadBytes; nil for a folder).
	Detect(p string, dir bool, head []byte) bool
	// Read streams the sources read from in to out and every problem to rep.
	Read(ctx context.Context, in Input, out Output, rep *Report)
}

// HeadBytes is how much of a file detect sees.
const HeadBytes = 8 << 10

// Input is one file or folder handed to a reader.
type Input struct {
	Path   string // as walked
	Root   string // the ingest root: the folder named on the command line, or the folder holding a file named directly
	Rel    string // slash path of path relative to root
	Forced bool   // --kind named the reader
}

// Output receives what readers read. Source takes a whole source; Mail takes one
// parsed mail message, which the runner threads with the others of the run.
type Output interface {
	Source(src memtree.SourceInput)
	Mail(m *MailMessage)
	// Contacts takes the people of an address book read from path.
	Contacts(path string, cs []memtree.ContactInput)
}

// Report collects what readers could not keep (Fail), repaired or guessed (Warn),
// and did not read (Skip), for the run's summary and its stderr lines. It is safe
// for concurrent use.
type Report struct {
	Mu  sync.Mutex
	Log *slog.Logger
	Sum *Summary
	// Times collects where the run's time goes (never nil).
	Times *RunTimes
}

func NewReport(log *slog.Logger) *Report {
	if log == nil {
		log = slog.Default()
	}
	return &Report{Log: log, Sum: &Summary{}, Times: &RunTimes{}}
}

// Fail records an input (or part of one) that could not be kept.
func (r *Report) Fail(fe FileError) {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	r.FailLocked(fe)
}

func (r *Report) FailLocked(fe FileError) {
	r.Sum.Errors = append(r.Sum.Errors, fe)
	r.Sum.Failures++
	r.Log.Debug("ingest: failed", "path", fe.Path, "where", fe.Where, "err", fe.Err)
}

// Warn records a repair or a guess worth telling (an unknown charset decoded as
// Windows-1252, a date taken from the file time): the text is kept.
func (r *Report) Warn(path, where, msg string) {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	r.Sum.Notes = append(r.Sum.Notes, FileError{Path: path, Where: where, Err: errors.New(msg)})
	r.Sum.Warnings++
	r.Log.Debug("ingest: warning", "path", path, "where", where, "msg", msg)
}

// WarnCount warns about path, when n is above zero, with n put into format
// (one %d): a count of what a reader did not keep ("%d deleted message(s) not
// stored").
func (r *Report) WarnCount(path string, n int, format string) {
	if n > 0 {
		r.Warn(path, "", fmt.Sprintf(format, n))
	}
}

// Skip records a file or folder that no reader reads (or that must not be read, a
// symbolic link). reason is a short fixed phrase: the summary counts skips by it.
func (r *Report) Skip(path, reason string) {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	r.Sum.Skipped++
	if r.Sum.SkippedBy == nil {
		r.Sum.SkippedBy = map[string]int{}
	}
	r.Sum.SkippedBy[reason]++
	r.Sum.Skips = append(r.Sum.Skips, FileError{Path: path, Err: errors.New(reason)})
	r.Log.Debug("ingest: skipped", "path", path, "why", reason)
}

// File counts one more file read. The runner counts each file it hands to a reader;
// a folder reader (Slack, Maildir) counts the files it reads inside.
func (r *Report) File() {
	r.Mu.Lock()
	r.Sum.Files++
	r.Mu.Unlock()
}

// ChatSources groups a conversation's messages into one source per calendar month
// (UTC) of their times: "<platform>:<conversation>/<YYYY-MM>", each with Merge set,
// so a later export of the same conversation adds its messages to the months it
// shares with an earlier one and removes nothing. title names the conversation
// ("#general", "Alice Smith"); the month is added to it. Messages keep their order
// within a month; messages without a time (TimestampMS 0) go to "/undated".
func ChatSources(platform, conversation, title string, msgs []memtree.MessageInput) []memtree.SourceInput {
	byMonth := map[string][]memtree.MessageInput{}
	var months []string
	for _, m := range msgs {
		k := "undated"
		if m.TimestampMS != 0 {
			k = time.UnixMilli(m.TimestampMS).UTC().Format("2006-01")
		}
		if _, ok := byMonth[k]; !ok {
			months = append(months, k)
		}
		byMonth[k] = append(byMonth[k], m)
	}
	sort.Strings(months)
	out := make([]memtree.SourceInput, 0, len(months))
	for _, k := range months {
		out = append(out, memtree.SourceInput{
			Kind:     memtree.KindChat,
			SourceID: platform + ":" + conversation + "/" + k,
			Title:    strings.TrimSpace(title) + " (" + k + ")",
			Provider: platform,
			Messages: byMonth[k],
			Merge:    true,
		})
	}
	return out
}

// WriteChat writes the sources ChatSources makes of msgs to out, each with
// origin (the file, or the place in it, they were read from).
func WriteChat(out Output, origin, platform, conversation, title string, msgs []memtree.MessageInput) {
	for _, src := range ChatSources(platform, conversation, title, msgs) {
		src.Origin = origin
		out.Source(src)
	}
}
