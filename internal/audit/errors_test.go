package audit

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
)

func TestFailureKind(t *testing.T) {
	for msg, want := range map[error]string{
		errors.New("tool x exited with code 4026531839"):                         FailureTimeout,
		errors.New("tool x exceeded its 3000 ms deadline"):                       FailureTimeout,
		fmt.Errorf("wait: %w", context.DeadlineExceeded):                         FailureTimeout,
		errors.New("tool x ran out of memory at its 4 MiB limit"):                FailureMemory,
		errors.New("tool x is unavailable: compile /home/a/x.wasm: bad section"): FailureUnavailable,
		errors.New("tool x exited with code 4"):                                  FailureInternal,
		errors.New("SQL logic error: too many SQL variables"):                    FailureInternal,
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
