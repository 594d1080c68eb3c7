// Package audit writes one JSON line per tool call to a size-rotated log file without
// ever blocking or failing the call it records.
package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// FileName is the name of the live audit log inside its directory; rotated files
// are FileName.1 (newest) … FileName.N (oldest).
const FileName = "audit.jsonl"

// Outcome values.
const (
	OutcomeOK    = "ok"
	OutcomeError = "error"
	// OutcomeCancelled is a call the client cancelled or gave up on: a normal end,
	// logged at debug level.
	OutcomeCancelled = "cancelled"
)

// ToolErrorOutcome is the outcome of a call whose tool reported an error with code.
func ToolErrorOutcome(code string) string { return "tool_error:" + code }

// Capabilities is what a call did through host functions.
type Capabilities struct {
	HostCalls map[string]int `json:"host_calls"`
	BytesIn   int64          `json:"bytes_in"`
	BytesOut  int64          `json:"bytes_out"`
	// Refused counts capability host calls that were not served (made outside
	// oh_call, which stops the instance, or beyond the call's budget).
	Refused map[string]int `json:"refused_host_calls,omitempty"`
}

// Entry is one audit line.
type Entry struct {
	Time    time.Time `json:"time"`
	Session string    `json:"session"`
	// Bridge is what relayed the client, when its clientInfo.name said so
	// ("mcp-remote 0.15.1" from "claude-ai (via mcp-remote 0.15.1)"); it is
	// kept out of Session so that each bridge release is not a new label.
	Bridge string `json:"bridge,omitempty"`
	// SessionID is the MCP session id the server minted for an HTTP client
	// (Mcp-Session-Id), empty on stdio: the one name of a session a client
	// cannot choose.
	SessionID string `json:"session_id,omitempty"`
	// Principal is who the call ran for over HTTP: "operator" (the operator
	// token) or the name of a token of `openhuman-core tokens add`; empty on
	// stdio. The server sets it from the bearer token, never the client.
	Principal    string         `json:"principal,omitempty"`
	RequestID    string         `json:"request_id"`
	Tool         string         `json:"tool"`
	ModuleSHA256 string         `json:"module_sha256"`
	Capabilities Capabilities   `json:"capabilities"`
	Arguments    map[string]any `json:"arguments"`
	Outcome      string         `json:"outcome"`
	Error        string         `json:"error,omitempty"`
	// ErrorID ties the short message a client was given to this line's Error
	// (the detail) and to the server log's line about it.
	ErrorID    string  `json:"error_id,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	// Details says what a command-line action did (forget: the sources and the
	// rows it deleted); tool calls leave it empty.
	Details map[string]any `json:"details,omitempty"`
	// Truncated names each field cut to its bound (bound.go) with its original
	// length in bytes ("line": the whole line, when the argument summary was
	// dropped).
	Truncated map[string]int `json:"truncated,omitempty"`
	// Payer is whom the line is charged to under the per-client budget
	// (Options.SessionBytesPerHour): an identity the client cannot choose, set
	// by the server — the stdio session, or the bearer token over HTTP
	// (TokenPayer). Empty: Session, which a client names itself (clientInfo.name,
	// X-OpenHuman-Agent), so a client renaming itself would get a fresh budget.
	// It is not written.
	Payer string `json:"-"`

	// settle marks the queue's "a session of Payer ended" item (EndSession):
	// no line of its own, only the payer's dropped-line count if it has one.
	settle bool
}

// MarshalJSON writes Time as RFC 3339 with nanoseconds in UTC.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	if e.Capabilities.HostCalls == nil {
		e.Capabilities.HostCalls = map[string]int{}
	}
	if e.Arguments == nil {
		e.Arguments = map[string]any{}
	}
	return json.Marshal(struct {
		Time string `json:"time"`
		plain
	}{Time: e.Time.UTC().Format(time.RFC3339Nano), plain: plain(e)})
}

// Options configure a Log.
type Options struct {
	// Dir is the folder of the log (created 0700 on first write).
	Dir string
	// MaxFileBytes rotates the live file before a write would take it past this size.
	MaxFileBytes int64
	// MaxFiles is how many rotated files are kept (audit.jsonl.1 … .MaxFiles).
	MaxFiles int
	// Buffer is the number of lines that may wait for the writer (default 1024);
	// lines beyond it are dropped and counted, never waited for.
	Buffer int
	// Logger receives the warnings about failed or dropped writes (default slog.Default()).
	Logger *slog.Logger
	// SessionBytesPerHour is each client's budget of audit-log bytes (a client
	// is an Entry's Payer, or its Session when no payer is set): a token
	// bucket of that capacity refilled at that rate per hour. A line over the
	// budget is not written; the next line the session may write is preceded by
	// one "rate_limited" line counting what was dropped. The default is one
	// sixteenth of the history kept (MaxFiles+1 files of MaxFileBytes: 6 MiB an
	// hour by default, ≈ 15,000 calls), so one session needs 15 hours at full
	// rate to rotate away the history of the others; at least 1 MiB an hour.
	// Negative: no budget.
	SessionBytesPerHour int64
}

// Log is an asynchronous, size-rotated JSON-lines audit log. Record never blocks;
// Close flushes what was recorded. A nil *Log records nothing.
type Log struct {
	opts    Options
	ch      chan Entry
	done    chan struct{}
	closing sync.Once
	closed  atomic.Bool
	mu      sync.RWMutex // guards sends against Close
	dropped atomic.Int64 // lines dropped because the buffer was full
	failed  atomic.Int64 // lines lost to write errors

	// writer-goroutine state
	f       *os.File
	w       *bufio.Writer
	size    int64
	failing bool
	lost    int64 // lines lost in the current failure streak
	pending int64 // lines written since the last successful flush
	budgets map[string]*sessionBudget
}

// New starts a Log writing into opts.Dir. It never fails: a directory that cannot
// be created or written shows up as a warning on the first write.
func New(opts Options) *Log {
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = 16 << 20
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = 5
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 1024
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SessionBytesPerHour == 0 {
		opts.SessionBytesPerHour = max(opts.MaxFileBytes*int64(opts.MaxFiles+1)/16, minSessionBytesPerHour)
	}
	l := &Log{opts: opts, ch: make(chan Entry, opts.Buffer), done: make(chan struct{}), budgets: map[string]*sessionBudget{}}
	go l.run()
	return l
}

// Path is the live log file.
func (l *Log) Path() string { return filepath.Join(l.opts.Dir, FileName) }

// Record queues e for writing. It never blocks: when the buffer is full the line is
// dropped and counted (see Dropped). Records after Close are ignored.
func (l *Log) Record(e Entry) {
	if l == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	boundEntry(&e) // before it waits in the buffer
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() {
		return
	}
	select {
	case l.ch <- e:
	default:
		if l.dropped.Add(1) == 1 {
			l.opts.Logger.Warn("audit: log writer is behind; dropping audit lines", "dir", l.opts.Dir)
		}
	}
}

// EndSession says a session charged to payer ended (its client left): a count
// of lines dropped over payer's budget and not yet reported is written now
// rather than before payer's next line, which may never come. session names
// the session in that line. It never blocks, like Record.
func (l *Log) EndSession(payer, session string) {
	if l == nil || payer == "" {
		return
	}
	l.Record(Entry{Payer: payer, Session: session, settle: true})
}

// Dropped is how many lines were dropped because the writer was behind.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// Failed is how many lines were lost to write errors.
func (l *Log) Failed() int64 { return l.failed.Load() }

// Close writes every queued line, closes the file and stops the writer.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.closing.Do(func() {
		l.mu.Lock()
		l.closed.Store(true)
		close(l.ch)
		l.mu.Unlock()
	})
	<-l.done
	return nil
}

func (l *Log) run() {
	defer close(l.done)
	for e := range l.ch {
		if e.settle {
			l.settle(e.Payer, e.Session, e.Time)
		} else {
			l.write(e)
		}
		if len(l.ch) == 0 {
			l.flush()
		}
	}
	l.settleAll(time.Now()) // no count of dropped lines outlives the log
	l.flush()
	if l.f != nil {
		l.f.Close()
		l.f, l.w = nil, nil
	}
}

// flush writes buffered lines to the file; only a successful flush ends a failure streak.
func (l *Log) flush() {
	if l.w == nil {
		return
	}
	if err := l.w.Flush(); err != nil {
		l.fail(err)
		return
	}
	l.pending = 0
	if l.failing {
		l.failing = false
		l.opts.Logger.Warn("audit: writing works again", "path", l.Path(), "lines_lost", l.lost)
		l.lost = 0
	}
}

func (l *Log) write(e Entry) {
	line, err := json.Marshal(e)
	if err != nil {
		// An argument summary holds only JSON-decoded values; this cannot happen,
		// but an audit line must never take the server down.
		line, _ = json.Marshal(map[string]string{"time": e.Time.UTC().Format(time.RFC3339Nano), "tool": e.Tool, "error": "audit entry not encodable: " + err.Error()})
	}
	line = shrinkLine(e, line)
	payer := e.Payer
	if payer == "" {
		payer = e.Session
	}
	ok, notice := l.admit(payer, e.Session, len(line)+1, e.Time)
	if !ok {
		return
	}
	if notice != nil {
		l.writeNotice(notice)
	}
	l.writeLine(append(line, '\n'))
}

// writeLine appends one encoded line (with its newline), rotating first when
// needed.
func (l *Log) writeLine(line []byte) {
	l.pending++ // this line is lost unless a later flush succeeds
	if err := l.ensureOpen(); err != nil {
		l.fail(err)
		return
	}
	if l.size > 0 && l.size+int64(len(line)) > l.opts.MaxFileBytes {
		if err := l.rotate(); err != nil {
			l.fail(err)
			return
		}
		if err := l.ensureOpen(); err != nil {
			l.fail(err)
			return
		}
	}
	if _, err := l.w.Write(line); err != nil {
		l.fail(err)
		return
	}
	l.size += int64(len(line))
}

// fail records a write failure: one warning per failure streak, the file closed so
// that the next line retries from scratch.
func (l *Log) fail(err error) {
	l.failed.Add(l.pending)
	l.lost += l.pending
	l.pending = 0
	if !l.failing {
		l.failing = true
		l.opts.Logger.Warn("audit: cannot write the audit log; dropping audit lines until it works again (tool calls are not affected)",
			"path", l.Path(), "err", err)
	}
	if l.f != nil {
		l.f.Close()
		l.f, l.w = nil, nil
	}
}

func (l *Log) ensureOpen() error {
	if l.f != nil {
		return nil
	}
	if err := os.MkdirAll(l.opts.Dir, 0o700); err != nil {
		return fmt.Errorf("create audit directory: %w", err)
	}
	f, err := os.OpenFile(l.Path(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat audit log: %w", err)
	}
	l.f, l.w, l.size = f, bufio.NewWriterSize(f, 64<<10), st.Size()
	return nil
}

// rotate shifts audit.jsonl.(N-1) → .N … audit.jsonl → .1, dropping the oldest.
func (l *Log) rotate() error {
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("flush audit log before rotating: %w", err)
	}
	l.pending = 0
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close audit log before rotating: %w", err)
	}
	l.f, l.w, l.size = nil, nil, 0
	base := l.Path()
	os.Remove(fmt.Sprintf("%s.%d", base, l.opts.MaxFiles))
	for i := l.opts.MaxFiles - 1; i >= 1; i-- {
		from := fmt.Sprintf("%s.%d", base, i)
		if _, err := os.Stat(from); err == nil {
			if err := os.Rename(from, fmt.Sprintf("%s.%d", base, i+1)); err != nil {
				return fmt.Errorf("rotate audit log: %w", err)
			}
		}
	}
	if err := os.Rename(base, base+".1"); err != nil {
		return fmt.Errorf("rotate audit log: %w", err)
	}
	return nil
}
