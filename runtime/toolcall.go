package runtime

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/openhuman/openhuman-core/internal/builtin"
	"github.com/openhuman/openhuman-core/sdk"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Tool-call requests: the host side of the first-party modules (runtime/RATIONALE.md,
// "First-party tools").
//
// A host function of the memory.read or web.searxng capability called with the
// module's own oh_call request — {"tool":…,"arguments":…,…}, as Call encodes it —
// instead of a typed read request runs the whole first-party tool on the host:
// argument checks, the typed host function, result shaping, all of it the Go code of
// package internal/builtin (the one place every check and message is written). The reply
// is the tool's answer in host-reply form, {"ok":<result>} or {"error":{…}}, so the
// module only dispatches on the tool, passes its request on and turns "ok" into
// "result". A typed request never starts with {"tool": (the typed requests have no
// such field, and a strict decode refused it before this existed), so every request
// a module sent before keeps its meaning. The capability gate is the host
// function's: a tool call reaches only the functions of the capability it came in
// through.

// toolCallPrefix starts every oh_call request Call encodes (abi.CallRequest's first
// field).
var toolCallPrefix = []byte(`{"tool":`)

// isToolCall reports whether a host-function request is an oh_call request.
func isToolCall(req []byte) bool { return bytes.HasPrefix(req, toolCallPrefix) }

// toolFunctions maps each first-party tool to the host function it must come in
// through.
var toolFunctions = map[string]string{
	builtin.ToolMemorySearch:  abi.FnMemorySearch,
	builtin.ToolMemoryRecall:  abi.FnMemoryRecall,
	builtin.ToolReadChunk:     abi.FnChunkGet,
	builtin.ToolBrowse:        abi.FnChunksList,
	builtin.ToolTopEntities:   abi.FnEntitiesTop,
	builtin.ToolListSources:   abi.FnSourcesList,
	builtin.ToolSearxngSearch: abi.FnSearxngSearch,
}

// toolCall runs the first-party tool of the oh_call request req, which came in
// through host function fn, and returns its answer as a host reply.
func (h *hostFuncs) toolCall(ctx context.Context, fn string, req []byte) []byte {
	var call abi.CallRequest
	if err := json.Unmarshal(req, &call); err != nil {
		return errReply(abi.CodeInvalidParams, "%s: the tool call request is not valid: %v", fn, err)
	}
	if want, ok := toolFunctions[call.Tool]; !ok || want != fn {
		return errReply(abi.CodeInvalidParams, "%s: serves no tool %q", fn, call.Tool)
	}
	var last []byte
	hm := hostMemory{ctx: ctx, h: h, reply: &last}
	defer hm.release()
	var (
		raw json.RawMessage
		err error
	)
	switch call.Tool {
	case builtin.ToolMemorySearch:
		raw, err = builtin.MemorySearch(call.Arguments, hm)
	case builtin.ToolMemoryRecall:
		raw, err = builtin.MemoryRecall(call.Arguments, hm)
	case builtin.ToolReadChunk:
		raw, err = builtin.ReadChunk(call.Arguments, hm)
	case builtin.ToolBrowse:
		raw, err = builtin.Browse(call.Arguments, hm)
	case builtin.ToolTopEntities:
		raw, err = builtin.TopEntities(call.Arguments, hm)
	case builtin.ToolListSources:
		raw, err = builtin.ListSources(call.Arguments, hm)
	case builtin.ToolSearxngSearch:
		var res *abi.SearxngResult
		if res, err = builtin.SearxngSearch(call.Arguments, hostWeb(hm)); err == nil {
			raw, err = json.Marshal(res)
		}
	}
	if err != nil {
		b, _ := json.Marshal(abi.HostReply{Error: sdk.AsError(err)})
		return b
	}
	out := make([]byte, 0, len(raw)+8)
	out = append(out, `{"ok":`...)
	out = append(out, raw...)
	return append(out, '}')
}

// hostMemory is builtin.Memory (and, as hostWeb, builtin.Web) on the host: each
// method encodes its typed request and runs the host function on it exactly as a
// guest's call would (sdk/memory.Raw), so errors and results are the ones the tool
// met when it ran inside the module.
type hostMemory struct {
	ctx   context.Context
	h     *hostFuncs
	reply *[]byte // the last dispatch reply, returned to its pool by release
}

func (m hostMemory) call(fn string, req any) (json.RawMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, sdk.Internal("encoding the %s request: %v", fn, err)
	}
	reply := m.h.dispatch(m.ctx, fn, body)
	if m.reply != nil {
		*m.reply = reply
	}
	return sdk.ReplyOK(fn, reply)
}

// release returns the buffer of the last reply to its pool once the answer built
// from it has been copied out.
func (m hostMemory) release() {
	if m.reply != nil && *m.reply != nil {
		releaseReply(*m.reply)
		*m.reply = nil
	}
}

func (m hostMemory) Search(r abi.SearchRequest) (json.RawMessage, error) {
	return m.call(abi.FnMemorySearch, r)
}
func (m hostMemory) Recall(r abi.RecallRequest) (json.RawMessage, error) {
	return m.call(abi.FnMemoryRecall, r)
}
func (m hostMemory) GetChunk(r abi.ChunkGetRequest) (json.RawMessage, error) {
	return m.call(abi.FnChunkGet, r)
}
func (m hostMemory) ListChunks(r abi.ChunksListRequest) (json.RawMessage, error) {
	return m.call(abi.FnChunksList, r)
}
func (m hostMemory) TopEntities(r abi.EntitiesTopRequest) (json.RawMessage, error) {
	return m.call(abi.FnEntitiesTop, r)
}
func (m hostMemory) ListSources(r abi.SourcesListRequest) (json.RawMessage, error) {
	return m.call(abi.FnSourcesList, r)
}

// hostWeb is the web.searxng capability on the host (see hostMemory).
type hostWeb hostMemory

func (w hostWeb) Search(r abi.SearxngRequest) (*abi.SearxngReply, error) {
	ok, err := hostMemory(w).call(abi.FnSearxngSearch, r)
	if err != nil {
		return nil, err
	}
	var out abi.SearxngReply
	if err := json.Unmarshal(ok, &out); err != nil {
		return nil, sdk.Internal("host function %s returned a result of the wrong shape: %v", abi.FnSearxngSearch, err)
	}
	return &out, nil
}
