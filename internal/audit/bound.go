package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// Bounds on what one client can put into the audit log (issue 29, finding 6: a
// client whose request ids and clientInfo.name were 1 MB each erased the whole
// default history in 115 calls).
const (
	// MaxFieldBytes bounds each identifying field of an entry (session, request
	// id, tool, module digest, error id); longer values are cut and their
	// original length kept in Entry.Truncated.
	MaxFieldBytes = 256
	// MaxErrorBytes bounds an entry's error text.
	MaxErrorBytes = 2048
	// MaxLineBytes bounds one encoded line: beyond it the argument summary and
	// the details are replaced by a note of their encoded size.
	MaxLineBytes = 16 << 10
	// maxSessions bounds the per-session budgets kept (the writer forgets full
	// budgets first).
	maxSessions = 4096
	// minSessionBytesPerHour is the least default session budget (a log kept
	// very small still records a few thousand calls an hour per session).
	minSessionBytesPerHour = 1 << 20
)

// boundEntry cuts e's fields to their bounds, noting original lengths.
func boundEntry(e *Entry) {
	cut := func(field string, s *string, limit int) {
		if len(*s) <= limit {
			return
		}
		if e.Truncated == nil {
			e.Truncated = map[string]int{}
		}
		e.Truncated[field] = len(*s)
		n := limit
		for n > 0 && !utf8.RuneStart((*s)[n]) {
			n--
		}
		*s = (*s)[:n] + "…"
	}
	cut("session", &e.Session, MaxFieldBytes)
	cut("session_id", &e.SessionID, MaxFieldBytes)
	cut("request_id", &e.RequestID, MaxFieldBytes)
	cut("tool", &e.Tool, MaxFieldBytes)
	cut("module_sha256", &e.ModuleSHA256, MaxFieldBytes)
	cut("error_id", &e.ErrorID, MaxFieldBytes)
	cut("outcome", &e.Outcome, MaxFieldBytes)
	cut("error", &e.Error, MaxErrorBytes)
}

// shrinkLine re-encodes e without its argument summary and details when its
// line is over MaxLineBytes.
func shrinkLine(e Entry, line []byte) []byte {
	if len(line) <= MaxLineBytes {
		return line
	}
	if e.Truncated == nil {
		e.Truncated = map[string]int{}
	}
	e.Truncated["line"] = len(line)
	if e.Arguments != nil {
		e.Arguments = map[string]any{"_truncated": "argument summary dropped: the line was over the audit log's bound"}
	}
	if e.Details != nil {
		e.Details = map[string]any{"_truncated": "details dropped: the line was over the audit log's bound"}
	}
	if len(e.Capabilities.HostCalls) > 64 || len(e.Capabilities.Refused) > 64 {
		e.Capabilities.HostCalls, e.Capabilities.Refused = nil, nil
	}
	out, err := json.Marshal(e)
	if err != nil || len(out) > MaxLineBytes {
		out, _ = json.Marshal(map[string]any{"time": e.Time.UTC().Format(time.RFC3339Nano), "session": e.Session, "tool": e.Tool,
			"outcome": e.Outcome, "error": "audit entry too large to record", "truncated": e.Truncated})
	}
	return out
}

// sessionBudget is one client's byte budget (a token bucket), keyed by payer.
type sessionBudget struct {
	tokens       float64
	last         time.Time
	dropped      int64
	droppedBytes int64
}

// TokenPayer is the Payer of every line of a call authenticated by the bearer
// token: all HTTP clients holding one token share one budget, because the
// names (X-OpenHuman-Agent, clientInfo.name), connections and MCP session ids
// are all theirs to choose and mint, and the token is not. It is a short
// digest, so the token never reaches the log or the server's memory twice.
func TokenPayer(token string) string {
	s := sha256.Sum256([]byte(token))
	return "token:" + hex.EncodeToString(s[:8])
}

// admit takes n bytes from payer's budget, reporting whether the line may be
// written; when it may and lines were dropped before, it returns the notice to
// write first (in session, the line's own).
func (l *Log) admit(payer, session string, n int, now time.Time) (ok bool, notice *Entry) {
	if l.opts.SessionBytesPerHour < 0 {
		return true, nil
	}
	capacity := float64(l.opts.SessionBytesPerHour)
	b := l.budgets[payer]
	if b == nil {
		if len(l.budgets) >= maxSessions {
			l.forgetFullBudgets(now)
		}
		b = &sessionBudget{tokens: capacity, last: now}
		l.budgets[payer] = b
	}
	b.tokens = min(capacity, b.tokens+now.Sub(b.last).Hours()*capacity)
	b.last = now
	if b.tokens < float64(n) {
		b.dropped++
		b.droppedBytes += int64(n)
		if b.dropped == 1 {
			l.opts.Logger.Warn("audit: a client is over its audit-log budget; its lines are counted, not written", "session", session, "payer", payer, "bytes_per_hour", l.opts.SessionBytesPerHour)
		}
		return false, nil
	}
	b.tokens -= float64(n)
	return true, l.takeNotice(payer, session, b, now, "")
}

// takeNotice is the "rate_limited" line counting b's dropped lines (nil when
// none), which it resets. why, when set, says what made it be written now.
func (l *Log) takeNotice(payer, session string, b *sessionBudget, now time.Time, why string) *Entry {
	if b == nil || b.dropped == 0 {
		return nil
	}
	d := map[string]any{"dropped_lines": b.dropped, "dropped_bytes": b.droppedBytes, "bytes_per_hour": l.opts.SessionBytesPerHour, "payer": payer}
	if why != "" {
		d["written_because"] = why
	}
	b.dropped, b.droppedBytes = 0, 0
	return &Entry{Time: now, Session: session, Tool: "audit", Outcome: OutcomeRateLimited, Details: d}
}

// settle writes payer's count of dropped lines, outside its budget: the
// count is what the budget leaves of the lines it refused, and is one line.
func (l *Log) settle(payer, session string, now time.Time) {
	if now.IsZero() {
		now = time.Now()
	}
	if n := l.takeNotice(payer, session, l.budgets[payer], now, "session ended"); n != nil {
		l.writeNotice(n)
	}
}

// settleAll writes every payer's count of dropped lines (the log closes, or
// the budgets are about to be forgotten).
func (l *Log) settleAll(now time.Time) {
	for payer, b := range l.budgets {
		if n := l.takeNotice(payer, "", b, now, "audit log closed or budgets reset"); n != nil {
			l.writeNotice(n)
		}
	}
}

func (l *Log) writeNotice(n *Entry) {
	if nl, err := json.Marshal(n); err == nil {
		l.writeLine(append(nl, '\n'))
	}
}

// forgetFullBudgets drops the budgets that have refilled (nothing to remember).
func (l *Log) forgetFullBudgets(now time.Time) {
	capacity := float64(l.opts.SessionBytesPerHour)
	for s, b := range l.budgets {
		if b.dropped == 0 && b.tokens+now.Sub(b.last).Hours()*capacity >= capacity {
			delete(l.budgets, s)
		}
	}
	if len(l.budgets) >= maxSessions { // all busy: start over rather than grow
		l.settleAll(now) // but not losing a count
		clear(l.budgets)
	}
}

// OutcomeRefusedHostCall marks a capability host call the runtime refused
// outside any tool call (its Tool is the module, its Error the reason).
const OutcomeRefusedHostCall = "refused_host_call"

// OutcomeRateLimited marks the line that reports a session's dropped lines.
const OutcomeRateLimited = "rate_limited"
