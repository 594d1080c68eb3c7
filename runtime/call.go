package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"github.com/openhuman/openhuman-core/internal/audit"
	"github.com/openhuman/openhuman-core/internal/jsoncheck"
	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Call runs one tool call in a pooled sandbox instance. It waits only for the
// tool's own module to compile. A tool's own error (invalid arguments, not found,
// ...) is an Outcome with ToolError; anything else that went wrong inside the
// sandbox (trap, deadline, memory limit, oversize or malformed result) is a Go
// error, and the instance it happened in is discarded.
func (h *Host) Call(ctx context.Context, c Call) (*Outcome, error) {
	h.mu.RLock()
	st, ok := h.tools[c.Tool]
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return nil, &CallFailure{Err: errClosed, Kind: audit.FailureUnavailable}
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, c.Tool)
	}
	m := st.module
	if !policy.AgentAllowed(st.tool.AllowedAgents, c.Client) {
		return nil, h.agentRefusal(st, c.Client)
	}
	if err := m.waitReady(ctx); err != nil {
		return nil, &CallFailure{Err: fmt.Errorf("tool %s is unavailable: %w", c.Tool, err), Kind: audit.FailureUnavailable}
	}
	args := c.Arguments
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = json.RawMessage("{}")
	}
	req, err := json.Marshal(abi.CallRequest{Tool: c.Tool, Arguments: args, Client: c.Client, RequestID: c.RequestID})
	if err != nil {
		return nil, fmt.Errorf("tool %s: arguments are not valid JSON: %w", c.Tool, err)
	}
	if len(req) > MaxMessageBytes {
		return nil, fmt.Errorf("tool %s: request of %d bytes exceeds the %d-byte limit", c.Tool, len(req), MaxMessageBytes)
	}

	limits := m.info.Limits
	m.inflight.Add(1)
	defer m.inflight.Done()
	start := time.Now()
	// The call's state travels with the instance made for it, if one is: a
	// capability host call its start function or _initialize attempts is refused
	// and counted in the call's usage.
	cs := &callState{tool: c.Tool, args: args}
	if m.grant != nil {
		cs.budget = m.grant.Budget
	}
	// Waiting for an instance is bounded by the caller's ctx only; the sandbox
	// deadline starts when the call runs.
	in, err := h.pool.acquire(withCallState(ctx, cs), m, c.owner())
	if err != nil {
		if ctx.Err() != nil {
			err = &CallFailure{ModuleSHA256: m.info.SHA256, Err: fmt.Errorf("tool %s: %w", c.Tool, err), Kind: kindOfDone(ctx)}
		} else {
			err = h.explain(ctx, ctx, c.Tool, m, nil, err)
		}
		h.record(m, c.Tool, time.Since(start), err)
		return nil, withUsage(err, cs)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Duration(limits.TimeoutMS)*time.Millisecond)
	defer cancel()
	cs.alloc = in.alloc
	in.owner = c.owner()
	cctx = withCallState(cctx, cs)
	var out []byte
	if in.plugin != nil {
		out, err = m.invokeExtism(cctx, in, st.spec.Export, req, limits.MaxResultBytes)
	} else {
		out, err = in.invoke(cctx, req, limits.MaxResultBytes)
	}
	in.calls++
	dur := time.Since(start)
	var outcome *Outcome
	if err == nil {
		outcome, err = decodeResponse(c.Tool, out)
	}
	if err != nil {
		err = h.explain(ctx, cctx, c.Tool, m, in, err)
	}
	// Not made again in the background: in a tight sequence of calls the next
	// call makes its own before that finished, and the two then stay idle.
	h.pool.release(in, err == nil && in.calls < recycleCalls && !in.grown())
	if err == nil {
		err = checkOutput(st, outcome, cs) // outschema.go; the instance is sound
	}
	h.record(m, c.Tool, dur, err)
	if err != nil {
		return nil, withUsage(err, cs)
	}
	cs.mu.Lock()
	outcome.Usage = cs.usage
	cs.mu.Unlock()
	outcome.ModuleSHA256 = m.info.SHA256
	outcome.Duration = dur
	return outcome, nil
}

// withUsage copies cs's usage into err when it is a *CallFailure: the reads of a
// failed call are audited too.
func withUsage(err error, cs *callState) error {
	var cf *CallFailure
	if errors.As(err, &cf) {
		cs.mu.Lock()
		cf.Usage = cs.usage
		cs.mu.Unlock()
	}
	return err
}

// record adds one call of tool to its module's statistics and to the tool's own.
func (h *Host) record(m *module, tool string, d time.Duration, err error) {
	now := time.Now()
	m.mu.Lock()
	m.stats.add(d, err, now)
	if m.toolStats == nil {
		m.toolStats = map[string]*statsWindowed{}
	}
	ts := m.toolStats[tool]
	if ts == nil {
		ts = &statsWindowed{}
		m.toolStats[tool] = ts
	}
	ts.add(d, err, now)
	m.mu.Unlock()
}

var resultPrefix = []byte(`{"result":`)

// decodeResponse checks the guest's CallResponse: valid JSON with exactly one of
// result (an object) and error.
func decodeResponse(tool string, out []byte) (*Outcome, error) {
	// Fast path: the SDK's {"result":<object>} — one validity scan (jsoncheck, the
	// same verdict as json.Valid at several times its speed), no copy.
	if r, ok := bytes.CutPrefix(out, resultPrefix); ok && len(r) > 1 && r[0] == '{' && r[len(r)-1] == '}' {
		r = r[:len(r)-1]
		if valid, compact := jsoncheck.Check(r); valid {
			return &Outcome{Result: r, Compact: compact}, nil
		}
	}
	var resp abi.CallResponse
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&resp); err != nil {
		return nil, fmt.Errorf("tool %s returned a malformed response (%d bytes): %w", tool, len(out), err)
	}
	switch {
	case resp.Error != nil && resp.Result != nil:
		return nil, fmt.Errorf("tool %s returned both a result and an error", tool)
	case resp.Error != nil:
		if resp.Error.Code == "" {
			resp.Error.Code = abi.CodeInternal
		}
		return &Outcome{ToolError: resp.Error}, nil
	case len(resp.Result) == 0 || resp.Result[0] != '{':
		return nil, fmt.Errorf("tool %s returned no result object", tool)
	}
	return &Outcome{Result: resp.Result}, nil
}

// explain turns a sandbox failure into an error a person can act on.
func (h *Host) explain(parent, cctx context.Context, tool string, m *module, in *instance, err error) error {
	stderr, full := "", ""
	if in != nil && in.stderr != nil {
		stderr, full = in.stderr.summary(), in.stderr.String()
	}
	first := boundedText(err.Error()) // drop wazero's wasm stack trace, bound the rest
	var violation *ABIViolation
	var exit *sys.ExitError
	var over *oversizeError
	var stack *StackExceeded
	var msg error
	kind := ""
	switch {
	case parent.Err() != nil:
		msg = fmt.Errorf("tool %s was cancelled: %w", tool, parent.Err())
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		msg, kind = fmt.Errorf("tool %s exceeded its %d ms deadline", tool, m.info.Limits.TimeoutMS), audit.FailureTimeout
	case errors.As(err, &violation):
		msg = fmt.Errorf("tool %s: %w", tool, violation)
	case errors.As(err, &over):
		msg = fmt.Errorf("tool %s: %w", tool, over)
	case errors.As(err, &stack):
		if stack.Frames == 0 {
			stack.Frames = m.stackFrames
		}
		msg = fmt.Errorf("tool %s: %w", tool, stack)
	case strings.Contains(first, "stack overflow"):
		// The engine's own ceiling (a frame heavier than its weight, or the
		// interpreter's frame limit).
		msg = fmt.Errorf("tool %s: wasm call stack overflowed the engine's ceiling: it recursed too deep or without end; the instance was stopped", tool)
	case strings.Contains(full, "out of memory") || strings.Contains(first, "out of memory"):
		msg, kind = fmt.Errorf("tool %s ran out of memory at its %d MiB limit", tool, m.info.Limits.MemoryMiB), audit.FailureMemory
	case errors.As(err, &exit):
		msg = fmt.Errorf("tool %s exited with code %d", tool, exit.ExitCode())
		if exit.ExitCode() == sys.ExitCodeDeadlineExceeded {
			kind = audit.FailureTimeout // its start function ran past the deadline
		}
	case strings.HasPrefix(err.Error(), "tool "+tool):
		msg = err
	default:
		msg = fmt.Errorf("tool %s failed in its sandbox: %s", tool, first)
	}
	if stderr != "" {
		msg = fmt.Errorf("%w (module stderr: %s)", msg, stderr)
	}
	if parent.Err() != nil {
		// The caller went away or cancelled: a normal end of a call, not a fault.
		h.logger.Debug("tool call cancelled", "tool", tool, "module", m.info.Name, "err", msg)
	} else {
		h.logger.Warn("tool call failed", "tool", tool, "module", m.info.Name, "err", msg, "detail", boundedText(err.Error()))
	}
	return &CallFailure{ModuleSHA256: m.info.SHA256, Err: msg, Kind: kind}
}

// agentRefusal names the policy entry whose allowed_agents refuses client.
func (h *Host) agentRefusal(st *servedTool, client string) error {
	e := &AgentRefusal{Tool: st.tool.Name, Client: client, Allowed: slices.Clone(st.tool.AllowedAgents)}
	if g := st.module.grant; g != nil && g.Entry != nil {
		e.Entry = fmt.Sprintf("[[module]] file = %q", g.Entry.File)
		if g.Entry.Line > 0 {
			e.Entry = fmt.Sprintf("at line %d (%s)", g.Entry.Line, e.Entry)
		}
	}
	return e
}

// kindOfDone is the failure kind of a call whose ctx ended: a timeout when its
// deadline passed, none when it was cancelled.
func kindOfDone(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return audit.FailureTimeout
	}
	return ""
}
