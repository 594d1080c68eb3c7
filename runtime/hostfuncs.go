package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// MaxMessageBytes caps a call request, a call result and a host-function request.
const MaxMessageBytes = 1 << 20

// maxLogLine is the longest log line kept (longer lines are truncated).
const maxLogLine = 1024

// logLinesPerSecond is each module's log budget.
const logLinesPerSecond = 50

// callState travels in the context of one call so host functions can count usage.
type callState struct {
	tool  string
	alloc api.Function // the instance's oh_alloc, reused for host replies
	// phase is what guest code runs: capability host calls are served only in
	// phaseCall (abiphase.go).
	phase phaseState
	// budget bounds the call's capability host calls and reply bytes (zero
	// fields: policy.DefaultHostBudget).
	budget policy.HostBudget
	mu     sync.Mutex
	usage  Usage
	// args are the call's arguments as its client sent them; argText their
	// strings, decoded once (embedgate.go).
	args     json.RawMessage
	argsOnce sync.Once
	argText  []string
}

// overBudget says why one more host call (returning reply bytes, or -1 before
// the call) would exceed cs's budget, or "" when it would not.
func (cs *callState) overBudget(reply int) string {
	if cs == nil {
		return ""
	}
	calls, bytes := cs.budget.Calls, cs.budget.Bytes
	if calls <= 0 {
		calls = policy.DefaultMaxHostCalls
	}
	if bytes <= 0 {
		bytes = policy.DefaultMaxHostBytes
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := 0
	for _, c := range cs.usage.HostCalls {
		n += c
	}
	switch {
	case reply < 0 && n >= calls:
		return fmt.Sprintf("this call has made its %d host calls (its per-call budget; max_host_calls in the module's policy entry)", calls)
	case reply >= 0 && cs.usage.BytesIn+int64(reply) > bytes:
		return fmt.Sprintf("this reply of %d bytes would take the call past its %d bytes of host replies (its per-call budget; max_host_bytes in the module's policy entry)", reply, bytes)
	}
	return ""
}

// phaseOf is cs's phase (phaseNone for a nil cs).
func (cs *callState) phaseOf() abiPhase {
	if cs == nil {
		return phaseNone
	}
	return cs.phase.get()
}

// refuse counts a capability host call that was not served.
func (cs *callState) refuse(fn string) {
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.usage.Refused == nil {
		cs.usage.Refused = map[string]int{}
	}
	cs.usage.Refused[fn]++
}

type callStateKey struct{}

func withCallState(ctx context.Context, cs *callState) context.Context {
	return context.WithValue(ctx, callStateKey{}, cs)
}

func callStateFrom(ctx context.Context) *callState {
	cs, _ := ctx.Value(callStateKey{}).(*callState)
	return cs
}

func (cs *callState) record(fn string, in, out int) {
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.usage.HostCalls == nil {
		cs.usage.HostCalls = map[string]int{}
	}
	cs.usage.HostCalls[fn]++
	cs.usage.BytesOut += int64(in)
	cs.usage.BytesIn += int64(out)
}

// hostFuncs serves the capability host functions for one module.
type hostFuncs struct {
	module   string
	reader   Reader
	searxng  SearxngClient
	autonomy string
	logger   *slog.Logger
	limiter  *rateLimiter
	// refusedHook is the host's OnRefusedHostCall (nil in tests that build
	// hostFuncs alone).
	refusedHook *atomic.Pointer[func(RefusedHostCall)]
}

func errReply(code, format string, args ...any) []byte {
	b, _ := json.Marshal(abi.HostReply{Error: &abi.Error{Code: code, Message: fmt.Sprintf(format, args...)}})
	return b
}

// decodeStrict decodes a host request, rejecting unknown keys and trailing data.
func decodeStrict(fn string, req []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(req))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: request is not valid: %w", fn, err)
	}
	if dec.More() {
		return fmt.Errorf("%s: request has data after the JSON object", fn)
	}
	return nil
}

// errNoSearxng is what searxng_search meets when the host has no SearXNG client.
var errNoSearxng = errors.New("no SearXNG client")

// callDecoded decodes req strictly into f's request type (a malformed request is
// abi.ErrInvalid) and calls f with it.
func callDecoded[Req, Res any](ctx context.Context, fn string, req []byte, f func(context.Context, Req) (Res, error)) (any, error) {
	var r Req
	if err := decodeStrict(fn, req, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", abi.ErrInvalid, err)
	}
	return f(ctx, r)
}

// dispatch runs host function fn on a JSON request and returns the JSON HostReply.
func (h *hostFuncs) dispatch(ctx context.Context, fn string, req []byte) []byte {
	if c := abi.CapabilityOf(fn); c != "" {
		if err := policy.ReadGate(h.autonomy, c); err != nil {
			return errReply(abi.CodeUnavailable, "%v", err)
		}
	}
	if isToolCall(req) {
		return h.toolCall(ctx, fn, req) // a first-party module's whole call (toolcall.go)
	}
	var (
		res any
		err error
	)
	switch fn {
	case abi.FnMemorySearch:
		res, err = callDecoded(withClientEmbedGate(ctx, callStateFrom(ctx)), fn, req, h.reader.Search)
	case abi.FnMemoryRecall:
		res, err = callDecoded(withClientEmbedGate(ctx, callStateFrom(ctx)), fn, req, h.reader.Recall)
	case abi.FnChunkGet:
		res, err = callDecoded(ctx, fn, req, h.reader.GetChunk)
	case abi.FnChunksList:
		res, err = callDecoded(ctx, fn, req, h.reader.ListChunks)
	case abi.FnEntitiesTop:
		res, err = callDecoded(ctx, fn, req, h.reader.TopEntities)
	case abi.FnSourcesList:
		res, err = callDecoded(ctx, fn, req, h.reader.ListSources)
	case abi.FnSearxngSearch:
		res, err = callDecoded(ctx, fn, req, func(ctx context.Context, r abi.SearxngRequest) (*abi.SearxngReply, error) {
			if h.searxng == nil {
				return nil, errNoSearxng
			}
			return h.searxng.Search(ctx, r)
		})
		if errors.Is(err, errNoSearxng) {
			return errReply(abi.CodeUnavailable, "SearXNG is not configured; set [searxng] enabled = true and base_url in config.toml")
		}
	default:
		return errReply(abi.CodeInternal, "host function %s does not exist", fn)
	}
	if err != nil {
		switch {
		case errors.Is(err, abi.ErrNotFound):
			return errReply(abi.CodeNotFound, "%v", err)
		case errors.Is(err, abi.ErrInvalid):
			return errReply(abi.CodeInvalidParams, "%v", err)
		case ctx.Err() != nil:
			return errReply(abi.CodeUnavailable, "%s was interrupted: %v", fn, ctx.Err())
		default:
			return errReply(abi.CodeUnavailable, "%s failed: %v; check the store or service and try again (see the server log)", fn, err)
		}
	}
	// {"ok":<res>} built directly: marshalling a HostReply would re-scan (compact)
	// the whole encoded result once more. The buffer is reused (replyBufs): the
	// reply is copied into guest memory and not kept.
	buf := getReplyBuf()
	buf.WriteString(`{"ok":`)
	if err := json.NewEncoder(buf).Encode(res); err != nil {
		putReplyBuf(buf)
		return errReply(abi.CodeInternal, "encoding the %s reply: %v", fn, err)
	}
	out := buf.Bytes()
	out[len(out)-1] = '}' // Encode ends the value with a newline
	return out
}

// replyBufs recycles the buffers host replies are encoded in (a search reply
// with its messages is 15-40 KB, grown from 4 KB by doubling on every call).
var replyBufs = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 16<<10)) }}

// maxPooledReply is the largest reply buffer kept for reuse.
const maxPooledReply = 1 << 20

func getReplyBuf() *bytes.Buffer {
	b := replyBufs.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putReplyBuf(b *bytes.Buffer) {
	if b.Cap() <= maxPooledReply {
		replyBufs.Put(b)
	}
}

// releaseReply returns the buffer of a reply dispatch encoded, once it has been
// copied into guest memory. reply must be the slice dispatch returned.
func releaseReply(reply []byte) {
	if len(reply) > 0 && cap(reply) >= 16<<10 {
		putReplyBuf(bytes.NewBuffer(reply[:0]))
	}
}

// serve reads a request, dispatches it and counts usage.
//
// A call past its host budget (policy.HostBudget) is not served: the guest gets
// an unavailable error and the refusal is counted in the call's usage, so a
// recall loop reaches the embedder a bounded number of times per call.
func (h *hostFuncs) serve(ctx context.Context, fn string, req []byte) []byte {
	cs := callStateFrom(ctx)
	if why := cs.overBudget(-1); why != "" {
		cs.refuse(fn)
		return errReply(abi.CodeUnavailable, "%s was not served: %s", fn, why)
	}
	reply := h.dispatch(ctx, fn, req)
	if why := cs.overBudget(len(reply)); why != "" {
		releaseReply(reply)
		cs.refuse(fn)
		return errReply(abi.CodeUnavailable, "%s was not served: %s", fn, why)
	}
	cs.record(fn, len(req), len(reply))
	return reply
}

// log writes one guest log line through slog, rate limited per module.
func (h *hostFuncs) log(ctx context.Context, level int32, msg []byte) {
	if !h.limiter.allow(time.Now()) {
		return
	}
	truncated := false
	if len(msg) > maxLogLine {
		msg, truncated = msg[:maxLogLine], true
	}
	s := string(bytes.ToValidUTF8(msg, []byte("\uFFFD")))
	if truncated {
		s += "…(truncated)"
	}
	lvl := slog.LevelInfo
	switch level {
	case abi.LogDebug:
		lvl = slog.LevelDebug
	case abi.LogWarn:
		lvl = slog.LevelWarn
	case abi.LogError:
		lvl = slog.LevelError
	}
	tool := h.module
	if cs := callStateFrom(ctx); cs != nil {
		tool = cs.tool
	}
	h.logger.Log(ctx, lvl, s, "tool", tool, "module", h.module)
}

// rateLimiter is a token bucket.
type rateLimiter struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	perSec  float64
	dropped int
}

func newRateLimiter(perSec int) *rateLimiter {
	return &rateLimiter{tokens: float64(perSec), perSec: float64(perSec)}
}

func (r *rateLimiter) allow(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() {
		r.tokens = min(r.perSec, r.tokens+now.Sub(r.last).Seconds()*r.perSec)
	}
	r.last = now
	if r.tokens >= 1 {
		r.tokens--
		return true
	}
	r.dropped++
	return false
}

// packed returns ptr<<32|len.
func packed(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

// writeGuest copies b into guest memory through its oh_alloc export (a call into
// the module from inside a host function) and returns the packed pointer. It is
// called only in phaseCall, so oh_alloc's own wazero function is never active
// below it: a host call from oh_alloc traps before any reply is delivered
// (abiphase.go), and the phase is phaseReply while oh_alloc runs here.
func writeGuest(ctx context.Context, mod api.Module, b []byte) (uint64, error) {
	cs := callStateFrom(ctx)
	if cs == nil || cs.alloc == nil {
		return 0, errors.New("no call is active to deliver the reply to")
	}
	if p := cs.phase.get(); p != phaseCall {
		return 0, fmt.Errorf("a reply cannot be delivered from %s", p)
	}
	cs.phase.set(phaseReply)
	res, err := cs.alloc.Call(ctx, uint64(len(b)))
	cs.phase.set(phaseCall)
	if err != nil {
		return 0, fmt.Errorf("oh_alloc(%d): %w", len(b), bound(err))
	}
	ptr := uint32(res[0])
	if !mod.Memory().Write(ptr, b) {
		return 0, fmt.Errorf("oh_alloc(%d) returned %d, outside the module's %d-byte memory", len(b), ptr, mod.Memory().Size())
	}
	return packed(ptr, uint32(len(b))), nil
}

// instantiateHostModule links the "openhuman" host module into rt with only the
// functions of the granted capabilities, plus log.
func (h *hostFuncs) instantiateHostModule(ctx context.Context, rt wazero.Runtime, granted []string) error {
	b := rt.NewHostModuleBuilder(abi.HostModule)
	for _, c := range granted {
		for _, fn := range abi.CapabilityFunctions[c] {
			b = b.NewFunctionBuilder().
				WithGoModuleFunction(h.wasmFunc(fn), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}).
				WithParameterNames("req_ptr", "req_len").
				Export(fn)
		}
	}
	b = b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			level, ptr, n := int32(uint32(stack[0])), uint32(stack[1]), uint32(stack[2])
			if n > maxLogLine {
				n = maxLogLine + 1 // enough to know it was truncated
			}
			msg, ok := mod.Memory().Read(ptr, n)
			if !ok {
				return
			}
			h.log(ctx, level, msg)
		}), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).
		WithParameterNames("level", "ptr", "len").
		Export(abi.FnLog)
	_, err := b.Instantiate(ctx)
	return err
}

func (h *hostFuncs) wasmFunc(fn string) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		ptr, n := uint32(stack[0]), uint32(stack[1])
		cs := callStateFrom(ctx)
		if cs.phaseOf() != phaseCall {
			panic(h.violation(ctx, cs, fn))
		}
		var reply []byte
		if n > MaxMessageBytes {
			reply = errReply(abi.CodeInvalidParams, "%s request of %d bytes exceeds the %d-byte limit", fn, n, MaxMessageBytes)
		} else if buf, ok := mod.Memory().Read(ptr, n); !ok {
			reply = errReply(abi.CodeInvalidParams, "%s request at %d+%d is outside the module's memory", fn, ptr, n)
		} else if !utf8.Valid(buf) {
			reply = errReply(abi.CodeInvalidParams, "%s request is not valid UTF-8 JSON", fn)
		} else {
			// The guest is suspended inside this call, so buf is stable until the
			// reply is written (and the request is decoded before that).
			reply = h.serve(ctx, fn, buf)
		}
		out, err := writeGuest(ctx, mod, reply)
		releaseReply(reply) // copied into guest memory (or not deliverable)
		if err != nil {
			// The reply cannot be delivered: trap, and the instance is discarded.
			var v *ABIViolation
			if errors.As(err, &v) {
				panic(v) // the reviewer's reason, not one more level of wrapping
			}
			panic(fmt.Errorf("host function %s: delivering the reply: %w", fn, err))
		}
		stack[0] = out
	}
}
