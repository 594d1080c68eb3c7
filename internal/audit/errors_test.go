package audit

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
)

// kinded is an error carrying its kind, as the runtime's CallFailure does.
type kinded struct {
	msg, kind string
}

func (k kinded) Error() string       { return k.msg }
func (k kinded) FailureKind() string { return k.kind }

// TestFailureKind: failures are classified by type, never by text: a message
// that only says "deadline" or "out of memory" is an internal failure.
func TestFailureKind(t *testing.T) {
	for msg, want := range map[error]string{
		fmt.Errorf("call: %w", kinded{"tool x exceeded its 3000 ms deadline", FailureTimeout}):   FailureTimeout,
		fmt.Errorf("wait: %w", context.DeadlineExceeded):                                         FailureTimeout,
		kinded{"tool x ran out of memory at its 4 MiB limit", FailureMemory}:                     FailureMemory,
		kinded{"tool x is unavailable: compile /home/a/x.wasm: bad section", FailureUnavailable}: FailureUnavailable,
		kinded{"tool x exited with code 4", ""}:                                                  FailureInternal,
		errors.New("tool x exceeded its 3000 ms deadline"):                                       FailureInternal,
		errors.New("tool x ran out of memory at its 4 MiB limit"):                                FailureInternal,
		errors.New("SQL logic error: too many SQL variables"):                                    FailureInternal,
	} {
		if got := FailureKind(msg); got != want {
			t.Errorf("FailureKind(%q) = %s, want %s", msg, got, want)
		}
	}
	if FailureKind(nil) != "" {
		t.Error("FailureKind(nil) is not empty")
	}
}

func TestNewErrorID(t *testing.T) {
	a, b := NewErrorID(), NewErrorID()
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(a) || a == b {
		t.Errorf("error ids %q, %q: want 12 hex digits, different each time", a, b)
	}
}
