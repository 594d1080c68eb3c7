// Package rpcserver serves openhuman-core's HTTP JSON-RPC API: the read controllers
// behind the MCP tools and the live, read-only global tool registry.
//
// # Dispatch
//
// Every controller method dispatches into the same WebAssembly tool module as the MCP
// tool it backs, through a [Dispatcher] (the runtime's *Host in production), so
// parameters are validated by the same guest code and results have the same shapes:
//
//	openhuman.memory_tree_search        -> memory.search
//	openhuman.memory_tree_recall        -> memory.recall
//	openhuman.memory_tree_get_chunk     -> tree.read_chunk (param `chunk_id`, as the MCP tool; not the reference's `id`)
//	openhuman.memory_tree_list_chunks   -> tree.browse
//	openhuman.memory_tree_top_entities  -> tree.top_entities
//	openhuman.memory_tree_list_sources  -> tree.list_sources
//	openhuman.tools_searxng_search      -> searxng_search
//
// Params are the MCP tool's arguments exactly (absent or null params mean {}); the
// result is the tool's result object, with no log envelope.
//
// # Errors
//
// Standard JSON-RPC 2.0 codes: -32700 parse error, -32600 invalid request, -32601
// method not found, -32602 invalid params (a guest `invalid_params` error lands here
// with the guest's message in `data`), -32603 internal error. The envelope's errors
// (parse errors, malformed request objects, batches, ids, params that are not an
// object) come from internal/rpcwire and are the code, message and data the stdio MCP
// server answers with; a malformed message without an id is answered under id null
// (JSON-RPC 2.0 §5), and each element of a batch is answered on its own. Server-defined codes:
//
//	-32001 Not found         a tool's `not_found` (e.g. an unknown chunk id) or an unknown registry tool_id
//	-32002 Tool unavailable  a tool's `unavailable`; a module that failed to load or was refused
//	                         (data gives the reason); a call that gave up waiting for a free slot
//	-32003 Tool disabled     openhuman.tools_searxng_search while SearXNG is disabled
//
// A sandbox failure during the call (trap, deadline, memory limit, oversized result) is
// -32603 with the runtime's explanation in `data`. Every error carries a readable
// `data` string. Tool calls are written to the audit log like MCP calls.
//
// # Load
//
// At most Options.MaxInFlightPerTool calls (default 2) run in one tool at a time; the
// rest wait, bounded by their request, before their sandbox deadline starts. See
// MaxInFlightPerTool for the measurement behind the default.
//
// The holders of the bearer token may have at most Options.MaxRequestsInFlight /rpc
// requests (default 64) being read or served at once, holding at most
// Options.MaxBodyBytesInFlight bytes of body (default 32 MiB; a request is charged its
// Content-Length, or MaxBodyBytes, before its body is read). Beyond either a request is
// answered at once with HTTP 429, Retry-After: 1 and error -32002 saying which bound it
// met. This is stdio's per-session rule (32 calls, 16 MiB) counted per token: a
// connection carries one request at a time and connections are free to open, while the
// token is the one identity a client cannot mint (inflight.go says why the bounds are
// twice stdio's).
//
// # Audit budget
//
// Each call's audit line is charged to the token (audit.TokenPayer), not to the `rpc:<agent>`
// label the client chooses: renaming itself gives a client no fresh share of the audit
// log's per-client budget.
//
// # Provenance
//
// Calls reach the guest with client label `rpc`, or `rpc:<agent>` when the request has
// an `X-OpenHuman-Agent` header; the header is normalised like MCP client names (trim,
// lowercase, runs of non-ASCII-alphanumerics become `-`, `-` trimmed, at most 64
// characters) and a value that normalises to nothing falls back to `rpc`. The label is
// checked against the tool's `allowed_agents` (policy.toml) by the runtime: a caller it
// does not admit gets error -32004 naming the tool, the policy entry and the list.
//
// # Registry
//
// openhuman.tool_registry_list returns {"tools":[entry…]}; openhuman.tool_registry_get
// returns {"tool":entry} (the reference returned a bare entry against its own schema).
// Entries are built on each call from the dispatcher's live Tools() and Status(): health
// is `available`, `degraded` (with last_error and last_error_at), `unavailable` (with
// health_reason: refused by policy or the static gate, failed to compile, or still
// compiling) or `disabled`. The registry is discovery-only: it never changes dispatch
// or grants.
package rpcserver
