package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/sys"
)

// NewErrorID returns a short random id (12 hex digits) for one failure: the
// client is told the id with a stable message, the server log and the audit
// line carry it with the detail.
func NewErrorID() string {
	var b [6]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b[:])
}

// Kinds of call failures (FailureKind). Clients are told the kind in words of the
// server's own; the error text stays in the logs.
const (
	FailureTimeout     = "timeout"     // the call ran out of time
	FailureMemory      = "memory"      // the sandbox ran out of memory
	FailureUnavailable = "unavailable" // the tool's module is not loaded
	FailureInternal    = "internal"    // anything else
)

// deadlineExit is how wazero reports a module whose start function ran past the
// call's deadline ("exited with code 4026531839").
var deadlineExit = fmt.Sprintf("exited with code %d", sys.ExitCodeDeadlineExceeded)

// FailureKind classifies a Go error returned by the runtime for a tool call.
func FailureKind(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(msg, "deadline"), strings.Contains(msg, deadlineExit):
		return FailureTimeout
	case strings.Contains(msg, "out of memory"):
		return FailureMemory
	case strings.Contains(msg, "is unavailable"), strings.Contains(msg, "host is closed"):
		return FailureUnavailable
	}
	return FailureInternal
}
