package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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

// Kinded is an error that knows its failure kind (the runtime's CallFailure).
type Kinded interface {
	error
	FailureKind() string
}

// FailureKind classifies an error returned by the runtime for a tool call by its
// type, never its text: the kind a Kinded error in its chain carries, a timeout
// for a context deadline, else FailureInternal ("" for nil).
func FailureKind(err error) string {
	if err == nil {
		return ""
	}
	var k Kinded
	if errors.As(err, &k) && k.FailureKind() != "" {
		return k.FailureKind()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return FailureTimeout
	}
	return FailureInternal
}
