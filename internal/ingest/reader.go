package ingest

import (
	"context"
	"errors"
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
type reader interface {
	// kind is the --kind name that forces this reader ("mbox", "slack", ...).
	kind() string
	// detect reports whether the reader reads p. dir says p is a folder; head holds
	// the first bytes of a file (up to headBytes; nil for a folder).
	detect(p string, dir bool, head []byte) bool
	// read streams the sources read from in to out and every problem to rep.
	read(ctx context.Context, in input, out output, rep *report)
}

// headBytes is how much of a file detect sees.
const headBytes = 8 << 10

// input is one file or folder handed to a reader.
type input struct {
	path   string // as walked
	root   string // the ingest root: the folder named on the command line, or the folder holding a file named directly
	rel    string // slash path of path relative to root
	forced bool   // --kind named the reader
}

// output receives what readers read. source takes a whole source; mail takes one
// parsed mail message, which the runner threads with the others of the run.
type output interface {
	source(src memtree.SourceInput)
	mail(m *mailMsg)
	// contacts takes the people of an address book read from path.
	contacts(path string, cs []memtree.ContactInput)
}

// report collects what readers could not keep (fail), repaired or guessed (warn),
// and did not read (skip), for the run's summary and its stderr lines. It is safe
// for concurrent use.
type report struct {
	mu  sync.Mutex
	log *slog.Logger
	sum *Summary
	// times collects where the run's time goes (never nil).
	times *runTimes
}

func newReport(log *slog.Logger) *report {
	if log == nil {
		log = slog.Default()
	}
	return &report{log: log, sum: &Summary{}, times: &runTimes{}}
}

// fail records an input (or part of one) that could not be kept.
func (r *report) fail(fe FileError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failLocked(fe)
}

func (r *report) failLocked(fe FileError) {
	r.sum.Errors = append(r.sum.Errors, fe)
	r.sum.Failures++
	r.log.Debug("ingest: failed", "path", fe.Path, "where", fe.Where, "err", fe.Err)
}

// warn records a repair or a guess worth telling (an unknown charset decoded as
// Windows-1252, a date taken from the file time): the text is kept.
func (r *report) warn(path, where, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sum.Notes = append(r.sum.Notes, FileError{Path: path, Where: where, Err: errors.New(msg)})
	r.sum.Warnings++
	r.log.Debug("ingest: warning", "path", path, "where", where, "msg", msg)
}

// skip records a file or folder that no reader reads (or that must not be read, a
// symbolic link). reason is a short fixed phrase: the summary counts skips by it.
func (r *report) skip(path, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sum.Skipped++
	if r.sum.SkippedBy == nil {
		r.sum.SkippedBy = map[string]int{}
	}
	r.sum.SkippedBy[reason]++
	r.sum.Skips = append(r.sum.Skips, FileError{Path: path, Err: errors.New(reason)})
	r.log.Debug("ingest: skipped", "path", path, "why", reason)
}

// file counts one more file read. The runner counts each file it hands to a reader;
// a folder reader (Slack, Maildir) counts the files it reads inside.
func (r *report) file() {
	r.mu.Lock()
	r.sum.Files++
	r.mu.Unlock()
}

// chatSources groups a conversation's messages into one source per calendar month
// (UTC) of their times: "<platform>:<conversation>/<YYYY-MM>", each with Merge set,
// so a later export of the same conversation adds its messages to the months it
// shares with an earlier one and removes nothing. title names the conversation
// ("#general", "Alice Smith"); the month is added to it. Messages keep their order
// within a month; messages without a time (TimestampMS 0) go to "/undated".
func chatSources(platform, conversation, title string, msgs []memtree.MessageInput) []memtree.SourceInput {
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
