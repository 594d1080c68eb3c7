package rpcserver

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/runtime"
)

// Transports of registry entries.
const (
	TransportMCP     = "mcp_stdio"
	TransportJSONRPC = "json_rpc"
)

// Health values of registry entries.
const (
	HealthAvailable   = "available"
	HealthDegraded    = "degraded"
	HealthUnavailable = "unavailable"
	HealthDisabled    = "disabled"
)

// searxngTool is the MCP name of the SearXNG tool, listed even while disabled.
const searxngTool = "searxng_search"

// controller maps one JSON-RPC method to the MCP tool whose module serves it.
type controller struct {
	Namespace string // e.g. "memory_tree"
	Function  string // e.g. "search"
	Tool      string // e.g. "memory.search"
}

// Method is the JSON-RPC method name, openhuman.<ns>_<fn>.
func (c controller) Method() string { return "openhuman." + c.Namespace + "_" + c.Function }

// ID is the registry tool_id, <ns>.<fn>.
func (c controller) ID() string { return c.Namespace + "." + c.Function }

// controllers are the tool-backed JSON-RPC methods.
var controllers = []controller{
	{"memory_tree", "search", "memory.search"},
	{"memory_tree", "recall", "memory.recall"},
	{"memory_tree", "get_chunk", "tree.read_chunk"},
	{"memory_tree", "list_chunks", "tree.browse"},
	{"memory_tree", "top_entities", "tree.top_entities"},
	{"memory_tree", "list_sources", "tree.list_sources"},
	{"tools", "searxng_search", searxngTool},
	// The controller-backed web search of the reference's registry, routed to
	// SearXNG (the only web search here): the same module, params and result.
	{"tools", "web_search", searxngTool},
}

// controllerByMethod and controllerByTool index controllers; a tool's first
// controller is its MCP entry's rpc_method.
var controllerByMethod, controllerByTool = func() (map[string]controller, map[string][]controller) {
	bm, bt := map[string]controller{}, map[string][]controller{}
	for _, c := range controllers {
		bm[c.Method()] = c
		bt[c.Tool] = append(bt[c.Tool], c)
	}
	return bm, bt
}()

// Route says how to call a registry entry's tool.
type Route struct {
	Protocol   string `json:"protocol"`             // "mcp" or "json_rpc"
	Method     string `json:"method"`               // "tools/call" or the JSON-RPC method
	Tool       string `json:"tool,omitempty"`       // MCP tool name (mcp routes)
	RPCMethod  string `json:"rpc_method,omitempty"` // backing JSON-RPC method of an MCP tool, "" when none (mcp routes)
	Controller string `json:"controller,omitempty"` // <ns>.<fn> (json_rpc routes)
}

// MarshalJSON writes {"protocol":"mcp","method":"tools/call","tool":…,"rpc_method":…|null}
// or {"protocol":"json_rpc","method":…,"controller":…}.
func (r Route) MarshalJSON() ([]byte, error) {
	if r.Protocol == "mcp" {
		var rpc *string
		if r.RPCMethod != "" {
			rpc = &r.RPCMethod
		}
		return json.Marshal(struct {
			Protocol  string  `json:"protocol"`
			Method    string  `json:"method"`
			Tool      string  `json:"tool"`
			RPCMethod *string `json:"rpc_method"`
		}{r.Protocol, r.Method, r.Tool, rpc})
	}
	return json.Marshal(struct {
		Protocol   string `json:"protocol"`
		Method     string `json:"method"`
		Controller string `json:"controller"`
	}{r.Protocol, r.Method, r.Controller})
}

// ModuleSummary describes the module behind an entry.
type ModuleSummary struct {
	Name         string         `json:"name,omitempty"`
	SHA256       string         `json:"sha256"`
	ABI          string         `json:"abi"`
	Capabilities []string       `json:"capabilities"`
	Limits       runtime.Limits `json:"limits"`
	Origin       string         `json:"origin"`
	State        string         `json:"state,omitempty"`
}

// Stats are the call statistics of an entry's tool (the runtime keeps them per tool,
// also when one module serves several tools).
type Stats struct {
	Count  int64   `json:"count"`
	Errors int64   `json:"errors"`
	P50MS  float64 `json:"p50_ms"`
	P95MS  float64 `json:"p95_ms"`
}

// Entry is one tool in the registry.
type Entry struct {
	ToolID        string          `json:"tool_id"`
	Name          string          `json:"name"`
	Title         string          `json:"title"`
	Description   string          `json:"description"`
	Version       string          `json:"version"`
	Transport     string          `json:"transport"`
	Route         Route           `json:"route"`
	InputSchema   json.RawMessage `json:"input_schema"`
	OutputSchema  json.RawMessage `json:"output_schema"`
	AllowedAgents []string        `json:"allowed_agents"`
	Tags          []string        `json:"tags"`
	Enabled       bool            `json:"enabled"`
	Health        string          `json:"health"`
	// HealthReason says why an entry is unavailable or disabled.
	HealthReason string `json:"health_reason,omitempty"`
	// LastError and LastErrorAt describe the failure that made an entry degraded.
	LastError   string        `json:"last_error,omitempty"`
	LastErrorAt *time.Time    `json:"last_error_at,omitempty"`
	Module      ModuleSummary `json:"module"`
	Stats       Stats         `json:"stats"`
}

// health is the live state of one tool.
type health struct {
	enabled     bool
	state       string
	reason      string
	lastError   string
	lastErrorAt *time.Time
}

// anySchema stands for a schema the registry cannot know (the module never loaded).
var anySchema = json.RawMessage(`{}`)

// knownTool is a tool the registry lists, with the module status serving it.
type knownTool struct {
	tool   runtime.Tool
	served bool
	status *runtime.ModuleStatus
}

// RegistryFor is the registry as the agent with provenance label client sees it: a
// tool whose allowed_agents do not admit it is not listed. Entries with no
// allowed_agents (a module that was refused or never loaded, listed so that an
// operator sees why) serve nobody and stay listed.
func (s *Server) RegistryFor(client string) []Entry {
	all := s.Registry()
	out := all[:0]
	for _, e := range all {
		if len(e.AllowedAgents) == 0 || policy.AgentAllowed(e.AllowedAgents, client) {
			out = append(out, e)
		}
	}
	return out
}

// Registry builds the registry entries from the dispatcher's live Tools() and Status(),
// sorted by tool_id and unique (the first of duplicate ids is kept and the rest logged).
func (s *Server) Registry() []Entry {
	tools := s.d.Tools()
	statuses := s.d.Status()
	byTool := map[string]*runtime.ModuleStatus{}
	bySHA := map[string]*runtime.ModuleStatus{}
	for i := range statuses {
		st := &statuses[i]
		for _, n := range st.Tools {
			if _, dup := byTool[n]; !dup {
				byTool[n] = st
			}
		}
		if st.Module.SHA256 != "" {
			if _, dup := bySHA[st.Module.SHA256]; !dup {
				bySHA[st.Module.SHA256] = st
			}
		}
	}
	statusOf := func(t runtime.Tool) *runtime.ModuleStatus {
		if t.Module.SHA256 != "" {
			if st := bySHA[t.Module.SHA256]; st != nil {
				return st
			}
		}
		return byTool[t.Name]
	}

	var known []knownTool
	seen := map[string]bool{}
	for _, t := range tools {
		if seen[t.Name] {
			s.logDuplicate(t.Name, t.Module.Name)
			continue
		}
		seen[t.Name] = true
		known = append(known, knownTool{tool: t, served: true, status: statusOf(t)})
	}
	// Tools the dispatcher does not serve now: manifests we were given, then names
	// only the status knows (refused or failed modules), then SearXNG's fallback.
	for _, t := range s.opts.KnownTools {
		if !seen[t.Name] {
			seen[t.Name] = true
			known = append(known, knownTool{tool: t, status: statusOf(t)})
		}
	}
	for i := range statuses {
		st := &statuses[i]
		for _, n := range st.Tools {
			if !seen[n] {
				seen[n] = true
				t := runtime.Tool{Name: n}
				if n == searxngTool {
					t = fallbackSearxngTool()
				}
				t.Module = st.Module
				known = append(known, knownTool{tool: t, status: st})
			}
		}
	}
	if !seen[searxngTool] {
		known = append(known, knownTool{tool: fallbackSearxngTool(), status: byTool[searxngTool]})
	}

	entries := make([]Entry, 0, 2*len(known))
	for _, k := range known {
		h := s.healthOf(k)
		entries = append(entries, s.mcpEntry(k, h))
		for _, c := range controllerByTool[k.tool.Name] {
			entries = append(entries, s.controllerEntry(c, k, h))
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].ToolID < entries[j].ToolID })
	out := entries[:0]
	for i, e := range entries {
		if i > 0 && e.ToolID == out[len(out)-1].ToolID {
			s.logDuplicate(e.ToolID, e.Module.Name)
			continue
		}
		out = append(out, e)
	}
	return out
}

// logDuplicate warns once per id about a duplicate registry id.
func (s *Server) logDuplicate(id, module string) {
	if _, logged := s.dupLogged.LoadOrStore(id, true); !logged {
		s.log.Warn("tool registry: duplicate tool id; keeping the first", "tool_id", id, "module", module)
	}
}

// healthOf derives an entry's live health from its module status.
func (s *Server) healthOf(k knownTool) health {
	st := k.status
	if k.tool.Name == searxngTool && !s.opts.SearXNGEnabled && (st == nil || st.State != runtime.StateRefused && st.State != runtime.StateFailed) {
		return health{state: HealthDisabled, reason: "SearXNG is disabled; set searxng.enabled=true in config.toml or OPENHUMAN_SEARXNG_ENABLED=true"}
	}
	if st == nil {
		if k.served {
			return health{enabled: true, state: HealthUnavailable, reason: "the runtime reports no status for this tool's module"}
		}
		return health{state: HealthUnavailable, reason: "no module serves this tool"}
	}
	switch st.State {
	case runtime.StateDisabled:
		return health{state: HealthDisabled, reason: orDefault(st.Error, "the module is disabled")}
	case runtime.StateRefused:
		return health{state: HealthUnavailable, reason: "refused: " + orDefault(st.Error, "the module was refused")}
	case runtime.StateFailed:
		return health{enabled: true, state: HealthUnavailable, reason: "failed to load: " + orDefault(st.Error, "unknown error")}
	case runtime.StateCompiling:
		return health{enabled: true, state: HealthUnavailable, reason: "the module is still compiling; calls wait for it"}
	case runtime.StateReady:
		if cs := toolStats(k); cs.ConsecutiveErrors > 0 {
			h := health{enabled: true, state: HealthDegraded, lastError: orDefault(cs.LastError, "unknown error")}
			if !cs.LastErrorAt.IsZero() {
				at := cs.LastErrorAt.UTC()
				h.lastErrorAt = &at
			}
			return h
		}
		return health{enabled: true, state: HealthAvailable}
	}
	return health{enabled: true, state: HealthUnavailable, reason: "unknown module state " + st.State}
}

// toolStats are the call statistics of k's tool: the runtime's per-tool figures, so
// that a failure of one tool does not mark the other tools of its module degraded;
// a tool never called has none. A status without per-tool figures (a runtime that
// keeps them per module only) falls back to the module's.
func toolStats(k knownTool) runtime.CallStats {
	if k.status.ToolStats == nil {
		return k.status.Stats
	}
	return k.status.ToolStats[k.tool.Name]
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// baseEntry fills the fields an MCP entry and its controller entry share.
func (s *Server) baseEntry(k knownTool, h health) Entry {
	t := k.tool
	mi := t.Module
	if k.status != nil {
		mi = k.status.Module // the runtime's view: granted capabilities, policy-capped limits
	}
	caps := mi.Capabilities
	if caps == nil {
		caps = []string{}
	}
	agents := t.AllowedAgents
	if len(agents) == 0 && mi.Origin == runtime.OriginBuiltin {
		agents = []string{"*"}
	}
	if agents == nil {
		agents = []string{}
	}
	e := Entry{
		Version:       s.opts.Version,
		InputSchema:   schemaOr(t.InputSchema),
		OutputSchema:  schemaOr(t.OutputSchema),
		AllowedAgents: agents,
		Enabled:       h.enabled,
		Health:        h.state,
		HealthReason:  h.reason,
		LastError:     h.lastError,
		LastErrorAt:   h.lastErrorAt,
		Module: ModuleSummary{
			Name: mi.Name, SHA256: mi.SHA256, ABI: mi.ABI, Capabilities: caps,
			Limits: mi.Limits, Origin: mi.Origin,
		},
	}
	if k.status != nil {
		e.Module.State = k.status.State
		cs := toolStats(k)
		e.Stats = Stats{Count: cs.Count, Errors: cs.Errors, P50MS: cs.P50MS, P95MS: cs.P95MS}
	}
	return e
}

func schemaOr(s json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(s))) == 0 || !json.Valid(s) {
		return anySchema
	}
	return s
}

// mcpEntry is the registry entry of an MCP tool.
func (s *Server) mcpEntry(k knownTool, h health) Entry {
	e := s.baseEntry(k, h)
	e.ToolID, e.Name = k.tool.Name, k.tool.Name
	e.Title = orDefault(k.tool.Title, k.tool.Name)
	e.Description = k.tool.Description
	e.Transport = TransportMCP
	route := Route{Protocol: "mcp", Method: "tools/call", Tool: k.tool.Name}
	if cs := controllerByTool[k.tool.Name]; len(cs) > 0 {
		route.RPCMethod = cs[0].Method()
	}
	e.Route = route
	e.Tags = tagsFor("mcp", e.ToolID)
	return e
}

// controllerEntry is the registry entry of the JSON-RPC controller backed by k's tool.
func (s *Server) controllerEntry(c controller, k knownTool, h health) Entry {
	e := s.baseEntry(k, h)
	e.ToolID, e.Name = c.ID(), c.ID()
	e.Title = titleOf(c.Function)
	e.Description = strings.TrimSpace(k.tool.Description + " (JSON-RPC controller " + c.Method() +
		"; params and result as the MCP tool " + c.Tool + ".)")
	e.Transport = TransportJSONRPC
	e.Route = Route{Protocol: "json_rpc", Method: c.Method(), Controller: c.ID()}
	e.Tags = tagsFor("controller", e.ToolID)
	return e
}

// titleOf splits a function name on "_" and capitalises each word: get_chunk -> Get Chunk.
func titleOf(fn string) string {
	words := strings.Split(fn, "_")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// tagsFor applies the reference rule: [source, first dot-segment of the id, "retrieval"
// if the id contains search or recall, "memory" if it contains memory or tree],
// de-duplicated in that order.
func tagsFor(source, id string) []string {
	tags := []string{source, strings.SplitN(id, ".", 2)[0]}
	if strings.Contains(id, "search") || strings.Contains(id, "recall") {
		tags = append(tags, "retrieval")
	}
	if strings.Contains(id, "memory") || strings.Contains(id, "tree") {
		tags = append(tags, "memory")
	}
	out := tags[:0]
	seen := map[string]bool{}
	for _, t := range tags {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// fallbackSearxngTool describes searxng_search when neither the dispatcher nor the
// caller supplied its manifest (SearXNG disabled and the module not loaded): the input
// schema of the MCP spec and the result shape {query, results[{title,url,snippet,source}]}.
func fallbackSearxngTool() runtime.Tool {
	return runtime.Tool{
		Name:        searxngTool,
		Title:       "SearXNG Search",
		Description: "Search the web through your self-hosted SearXNG instance. Needs searxng.enabled=true.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","minLength":1},` +
			`"categories":{"type":"array","items":{"type":"string","enum":["web","general","news","images"]}},` +
			`"language":{"type":"string","minLength":1},` +
			`"max_results":{"type":"integer","minimum":1,"maximum":50}},` +
			`"required":["query"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string"},` +
			`"results":{"type":"array","items":{"type":"object","properties":{"title":{"type":"string"},"url":{"type":"string"},"snippet":{"type":"string"},"source":{"type":"string"}},"required":["title","url","snippet","source"]}}},` +
			`"required":["query","results"]}`),
		Annotations: runtime.Annotations{ReadOnlyHint: true, OpenWorldHint: true},
		Module:      runtime.ModuleInfo{Name: "searxng_search.wasm", ABI: "openhuman/1", Capabilities: []string{"web.searxng"}, Origin: runtime.OriginBuiltin},
	}
}
