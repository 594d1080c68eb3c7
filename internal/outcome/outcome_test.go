package outcome

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

var reID = regexp.MustCompile(`\(error id ([0-9a-f]{12})\)`)

// TestTheTable: every end of a call, by type, gets its class, the client's words
// (hidden details never among them), the audit outcome and, when hidden, an
// error id that the client's words name.
func TestTheTable(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	tool := func(te *abi.Error) *runtime.Outcome { return &runtime.Outcome{ToolError: te} }
	cases := []struct {
		name        string
		ctx         context.Context
		out         *runtime.Outcome
		err         error
		userService bool
		class       Class
		text        string // the client's words contain it
		hidden      string // the client's words never contain it
		audit       string
	}{
		{"ok", live, &runtime.Outcome{Result: []byte(`{}`)}, nil, false, OK, "", "", audit.OutcomeOK},
		{"schema", live, nil, &runtime.CallFailure{Err: &runtime.OutputSchemaError{Tool: "t.x", Module: "x.wasm", Path: "$.a", Problem: "missing"}}, false, BrokenResult, "$.a", "", audit.OutcomeError},
		{"refused", live, nil, &runtime.AgentRefusal{Tool: "t.x", Client: "mcp:bad", Allowed: []string{"mcp:good"}}, false, Refused, "mcp:bad", "", audit.OutcomeError},
		{"unknown", live, nil, fmt.Errorf("%w: %q", runtime.ErrUnknownTool, "t.x"), false, UnknownTool, `unknown tool "t.x"`, "", audit.OutcomeError},
		{"cancelled", gone, nil, errors.New("context canceled /home/ann"), false, Cancelled, "cancelled by the client", "/home/ann", audit.OutcomeCancelled},
		{"timeout", live, nil, &runtime.CallFailure{Err: errors.New("tool t.x exceeded its 400 ms deadline /home/ann"), Kind: audit.FailureTimeout}, false, Failed, "did not finish within its time limit", "/home/ann", audit.OutcomeError},
		{"memory", live, nil, &runtime.CallFailure{Err: errors.New("out of memory at 4 MiB"), Kind: audit.FailureMemory}, false, Failed, "ran out of memory in its sandbox", "4 MiB", audit.OutcomeError},
		{"not loaded", live, nil, &runtime.CallFailure{Err: errors.New("compile /home/ann/x.wasm"), Kind: audit.FailureUnavailable}, false, Unavailable, "is unavailable", "/home/ann", audit.OutcomeError},
		{"text says deadline", live, nil, errors.New("deadline out of memory is unavailable"), false, Failed, "internal error", "deadline", audit.OutcomeError},
		{"no outcome", live, nil, nil, false, Failed, "internal error", "", audit.OutcomeError},
		{"invalid", live, tool(&abi.Error{Code: abi.CodeInvalidParams, Message: "k must be 1..50"}), nil, false, Invalid, "k must be 1..50", "", audit.ToolErrorOutcome(abi.CodeInvalidParams)},
		{"not found", live, tool(&abi.Error{Code: abi.CodeNotFound, Message: "no such chunk"}), nil, false, NotFound, "no such chunk", "", audit.ToolErrorOutcome(abi.CodeNotFound)},
		{"empty message", live, tool(&abi.Error{Code: abi.CodeNotFound}), nil, false, NotFound, "reported not_found with no message", "", audit.ToolErrorOutcome(abi.CodeNotFound)},
		{"searxng down", live, tool(&abi.Error{Code: abi.CodeUnavailable, Message: "SearXNG is unreachable; is it running?"}), nil, true, UserService, "is it running", "", audit.ToolErrorOutcome(abi.CodeUnavailable)},
		{"store failed", live, tool(&abi.Error{Code: abi.CodeUnavailable, Message: "database disk image is malformed"}), nil, false, Unavailable, "could not read the store", "malformed", audit.ToolErrorOutcome(abi.CodeUnavailable)},
		{"tool internal", live, tool(&abi.Error{Code: "internal", Message: "SQL logic error"}), nil, false, Failed, "internal error", "SQL", audit.ToolErrorOutcome("internal")},
	}
	for _, c := range cases {
		o := Of(c.ctx, "t.x", c.out, c.err, c.userService)
		if o.Class != c.class || o.Audit != c.audit {
			t.Errorf("%s: class %d audit %q, want %d %q", c.name, o.Class, o.Audit, c.class, c.audit)
		}
		if !strings.Contains(o.Text, c.text) || (c.hidden != "" && strings.Contains(o.Text, c.hidden)) {
			t.Errorf("%s: client text %q, want %q in it and %q not", c.name, o.Text, c.text, c.hidden)
		}
		if c.hidden != "" && c.class != Cancelled {
			m := reID.FindStringSubmatch(o.Text)
			if m == nil || m[1] != o.ErrorID || !strings.Contains(o.Detail, c.hidden) {
				t.Errorf("%s: hidden detail %q under id %q, text %q: want the id named and the detail kept", c.name, o.Detail, o.ErrorID, o.Text)
			}
		}
	}
	if o := NotAnObject("t.x"); o.Class != BrokenResult || !strings.Contains(o.Text, "not a JSON object") {
		t.Errorf("NotAnObject = %+v", o)
	}
}
