package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// abiPhase is what guest code the host is running in an instance. A capability
// host function is legal only in phaseCall: from anywhere else the host would
// have to deliver its reply through oh_alloc while guest code the host started
// is still suspended below it (wazero's compiler starts a nested call at the
// same stack top, overwriting the suspended frames), or serve data before any
// call exists to account it to. RATIONALE "No host↔guest nesting".
type abiPhase uint32

const (
	// phaseNone: no guest code the host started is running (or the host is
	// between two calls into the instance).
	phaseNone abiPhase = iota
	// phaseStart: the module's start function, run by instantiation.
	phaseStart
	// phaseInitialize: the reactor's _initialize export.
	phaseInitialize
	// phaseAlloc: oh_alloc making room for the call request.
	phaseAlloc
	// phaseCall: oh_call (or an Extism tool export) — host calls are legal.
	phaseCall
	// phaseReply: oh_alloc making room for a host function's reply.
	phaseReply
)

func (p abiPhase) String() string {
	switch p {
	case phaseStart:
		return "its start function"
	case phaseInitialize:
		return "_initialize"
	case phaseAlloc:
		return "oh_alloc (while the host wrote the call request)"
	case phaseCall:
		return "oh_call"
	case phaseReply:
		return "oh_alloc (while the host delivered a host function's reply)"
	}
	return "outside any call"
}

// phaseState is the phase of one instance's guest code, shared through the
// context of every call into it (callState embeds it).
type phaseState struct{ v atomic.Uint32 }

func (s *phaseState) get() abiPhase {
	if s == nil {
		return phaseNone
	}
	return abiPhase(s.v.Load())
}

// set changes the phase and returns the one before.
func (s *phaseState) set(p abiPhase) abiPhase { return abiPhase(s.v.Swap(uint32(p))) }

// ABIViolation is the trap of an instance whose guest called a capability host
// function outside oh_call. The instance is discarded; the host function was
// not served.
type ABIViolation struct {
	Module string
	Func   string
	Phase  string
}

func (e *ABIViolation) Error() string {
	return fmt.Sprintf("module %s called host function %s from %s: capability host functions may be called only while the host is inside oh_call (never from a start function, _initialize or oh_alloc); the instance was stopped and the call was not served",
		e.Module, e.Func, e.Phase)
}

// maxErrorText bounds the text of a sandbox error kept in a log line, a module
// state, an audit line or a client message: one line of it, wazero's wasm stack
// trace dropped, so that errors cannot nest into one another (a nesting guest
// made each level wrap the inner error with its trace: memory grew with the
// square of the depth).
const maxErrorText = 512

// boundedText is the first line of s, at most maxErrorText bytes (cut on a rune
// boundary, "…" appended when cut).
func boundedText(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// boundedError keeps the chain of err (errors.Is/As still see an *ABIViolation
// or a *sys.ExitError) while its text is boundedText.
type boundedError struct {
	msg string
	err error
}

func (e *boundedError) Error() string { return e.msg }
func (e *boundedError) Unwrap() error { return e.err }

func bound(err error) error {
	if err == nil {
		return nil
	}
	var v *ABIViolation
	if errors.As(err, &v) {
		// The reviewer's reason, not wazero's wrapping of it.
		return &boundedError{msg: boundedText(v.Error()), err: err}
	}
	return &boundedError{msg: boundedText(err.Error()), err: err}
}

// violation records and logs a capability host call made outside oh_call and
// returns the trap. cs may be nil (an instance the host warmed outside any call).
func (h *hostFuncs) violation(ctx context.Context, cs *callState, fn string) *ABIViolation {
	v := &ABIViolation{Module: h.module, Func: fn, Phase: cs.phaseOf().String()}
	cs.refuse(fn)
	h.logger.Warn("host call outside oh_call refused; the instance is stopped", "module", h.module, "func", fn, "phase", v.Phase)
	if cs == nil || cs.tool == "" {
		// No call's audit line holds it (an instance warmed before any client).
		if hook := h.refusedHook; hook != nil {
			if report := hook.Load(); report != nil {
				(*report)(RefusedHostCall{Time: time.Now(), Module: h.module, Func: fn, Reason: v.Error()})
			}
		}
	}
	return v
}

// RefusedHostCall is a capability host call refused outside any tool call (an
// instance the host warmed, whose start function or _initialize called the
// host): nothing was served, and no call's audit line records it, so the host
// reports it to OnRefusedHostCall.
type RefusedHostCall struct {
	Time   time.Time
	Module string
	Func   string
	Reason string
}

// OnRefusedHostCall sets fn to receive every RefusedHostCall (the servers
// write it to the audit log). Set it before the modules compile.
func (h *Host) OnRefusedHostCall(fn func(RefusedHostCall)) { h.refusedHook.Store(&fn) }
