// Package outcome is the one table of what a tool call's end means, for both
// servers (internal/mcpserver's tools/call and internal/rpcserver's /rpc): it
// classifies the runtime's answer by type — a policy refusal, a broken output
// schema, an unknown tool, a cancelled call, a sandbox failure of a kind
// (audit.FailureKind), a tool's own error by its abi code — and gives the words
// the client is told, the detail that stays in the log and the audit line (under
// an error id when it is hidden from the client), and the audit outcome. Each
// server only puts the class on its wire: an MCP isError result or JSON-RPC
// error, a JSON-RPC error code on /rpc.
package outcome

import (
	"context"
	"errors"
	"fmt"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/rpcwire"
	"github.com/openhuman/openhuman-core/runtime"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Class is what kind of end a call had.
type Class int

const (
	// OK: the tool answered with a result.
	OK Class = iota
	// Invalid: the tool refused the request (abi invalid_params); its message
	// is for the client.
	Invalid
	// NotFound: the tool found nothing under the id asked for (abi
	// not_found); its message is for the client.
	NotFound
	// UserService: the tool could not reach the user's own service (SearXNG);
	// its message says what the user can do.
	UserService
	// Unavailable: the store or service the tool needs failed, or its module
	// is not loaded: hidden under an error id.
	Unavailable
	// Refused: the policy refuses this client (runtime.AgentRefusal); the text
	// names the policy entry and is safe to send.
	Refused
	// BrokenResult: the module's result breaks its output schema or is not a
	// JSON object; the text names the fix for its author.
	BrokenResult
	// UnknownTool: no loaded module serves the tool.
	UnknownTool
	// Cancelled: the client cancelled the call or went away.
	Cancelled
	// Failed: the call failed in its sandbox or the host (timeout, memory,
	// internal): hidden under an error id.
	Failed
)

// Outcome is one call's end, as both servers tell it.
type Outcome struct {
	Class Class
	// Kind is the failure kind of a Failed or Unavailable call
	// (audit.FailureTimeout, …).
	Kind string
	// Text is what the client is told (without a server's method prefix);
	// empty for OK.
	Text string
	// Detail is what the log and the audit line keep: the runtime's or the
	// tool's own words.
	Detail string
	// ErrorID, when set, is the id under which Detail is kept; Text names it.
	ErrorID string
	// Audit is the audit line's outcome (audit.OutcomeOK, …).
	Audit string
}

// Of classifies the end of a call of tool: the runtime's outcome out and error
// err, under the call's ctx. userService says the tool's "unavailable" errors are
// about the user's own service (SearXNG), which the user can act on. A result
// that is not a JSON object is the caller's to check (BrokenResult, Result).
func Of(ctx context.Context, tool string, out *runtime.Outcome, err error, userService bool) Outcome {
	var refusal *runtime.AgentRefusal
	var schemaErr *runtime.OutputSchemaError
	switch {
	case errors.As(err, &schemaErr):
		// The text names the tool, the JSON path and what its author must fix
		// (no host paths).
		return Outcome{Class: BrokenResult, Text: schemaErr.Error(), Detail: schemaErr.Error(), Audit: audit.OutcomeError}
	case errors.As(err, &refusal):
		return Outcome{Class: Refused, Text: refusal.Error(), Detail: refusal.Error(), Audit: audit.OutcomeError}
	case errors.Is(err, runtime.ErrUnknownTool):
		return Outcome{Class: UnknownTool, Text: fmt.Sprintf("unknown tool %q", tool), Detail: err.Error(), Audit: audit.OutcomeError}
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		msg := fmt.Sprintf("%s was cancelled by the client", tool)
		return Outcome{Class: Cancelled, Text: msg, Detail: msg + ": " + err.Error(), Audit: audit.OutcomeCancelled}
	case err != nil:
		// The runtime's text (sandbox traps, exit codes, compile errors, host
		// paths) stays in the logs; the client gets stable words and the id.
		kind := audit.FailureKind(err)
		class := Failed
		if kind == audit.FailureUnavailable {
			class = Unavailable
		}
		return hidden(class, kind, tool, err.Error())
	case out == nil:
		return hidden(Failed, audit.FailureInternal, tool, "the runtime returned no outcome")
	case out.ToolError != nil:
		te := out.ToolError
		o := Outcome{Text: te.Message, Detail: te.Message, Audit: audit.ToolErrorOutcome(te.Code)}
		if o.Text == "" {
			o.Text = fmt.Sprintf("%s reported %s with no message", tool, te.Code)
		}
		switch {
		case te.Code == abi.CodeInvalidParams:
			o.Class = Invalid // written by the tool about the request: the model can act on it
		case te.Code == abi.CodeNotFound:
			o.Class = NotFound
		case te.Code == abi.CodeUnavailable && userService:
			// About the user's own SearXNG ("unreachable; is it running?", "add
			// json to search.formats"): the user can act on it.
			o.Class = UserService
		case te.Code == abi.CodeUnavailable:
			// The memory store failed ("database disk image is malformed", "too
			// many SQL variables"): nothing the model can act on.
			o.Class, o.ErrorID = Unavailable, audit.NewErrorID()
			o.Text = fmt.Sprintf("%s could not read the store or service it needs (error id %s); try again later, or ask the user to check the openhuman-core log", tool, o.ErrorID)
		default:
			o.Class, o.Kind, o.ErrorID = Failed, audit.FailureInternal, audit.NewErrorID()
			o.Detail = te.Code + ": " + te.Message
			o.Text = fmt.Sprintf(rpcwire.FailureFormat(audit.FailureInternal, tool), o.ErrorID)
		}
		return o
	}
	return Outcome{Class: OK, Audit: audit.OutcomeOK}
}

// NotAnObject is the outcome of a call whose module returned a result that is
// not a JSON object.
func NotAnObject(tool string) Outcome {
	msg := fmt.Sprintf("%s failed: the tool module returned a result that is not a JSON object; report this to the module's author", tool)
	return Outcome{Class: BrokenResult, Text: msg, Detail: msg, Audit: audit.OutcomeError}
}

// hidden is a failure whose detail stays in the log under a new error id.
func hidden(class Class, kind, tool, detail string) Outcome {
	id := audit.NewErrorID()
	return Outcome{Class: class, Kind: kind, Text: fmt.Sprintf(rpcwire.FailureFormat(kind, tool), id), Detail: detail, ErrorID: id, Audit: audit.OutcomeError}
}
