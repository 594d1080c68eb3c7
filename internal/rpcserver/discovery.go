package rpcserver

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
)

// OpenRPCVersion is the OpenRPC specification version of GET /schema.
const OpenRPCVersion = "1.3.2"

// serveIndex answers GET /: a short description of the server and its routes.
func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	if !getOrHead(w, r, "/") {
		return
	}
	routes := map[string]string{
		"POST /rpc":   "JSON-RPC 2.0 (Authorization: Bearer <token>); batches of up to " + itoa(s.opts.MaxBatch),
		"GET /health": "liveness and tool counts (open)",
		"GET /schema": "OpenRPC document of every /rpc method (open)",
	}
	if s.opts.MCP != nil {
		routes["/mcp"] = "MCP over Streamable HTTP: POST, GET (stream), DELETE (Authorization: Bearer <token>; a static token, no OAuth)"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"ok":          true,
		"name":        "openhuman-core",
		"version":     s.opts.Version,
		"description": "Read-only memory tree (ingested mail, chat and documents) and optional SearXNG web search, served through sandboxed WebAssembly tools.",
		"routes":      routes,
		"methods":     methodNames(),
	})
}

// getOrHead answers anything but GET and HEAD with 405 and reports whether to go on.
func getOrHead(w http.ResponseWriter, r *http.Request, path string) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"ok": false, "error": "method_not_allowed", "message": "use GET " + path})
	return false
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// contentDescriptor is an OpenRPC Content Descriptor.
type contentDescriptor struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Schema      json.RawMessage `json:"schema"`
}

// rpcMethod is an OpenRPC Method Object.
type rpcMethod struct {
	Name           string              `json:"name"`
	Summary        string              `json:"summary,omitempty"`
	Description    string              `json:"description,omitempty"`
	Tags           []map[string]string `json:"tags,omitempty"`
	ParamStructure string              `json:"paramStructure"`
	Params         []contentDescriptor `json:"params"`
	Result         contentDescriptor   `json:"result"`
}

// serveSchema answers GET /schema with an OpenRPC document of every method, built
// from the same input and output schemas the registry lists (the tool manifests).
func (s *Server) serveSchema(w http.ResponseWriter, r *http.Request) {
	if !getOrHead(w, r, "/schema") {
		return
	}
	writeJSON(w, http.StatusOK, s.OpenRPC())
}

// OpenRPC is the OpenRPC document of the server's methods.
func (s *Server) OpenRPC() map[string]any {
	byID := map[string]Entry{}
	for _, e := range s.Registry() {
		byID[e.ToolID] = e
	}
	var methods []rpcMethod
	for _, c := range controllers {
		e, ok := byID[c.ID()]
		if !ok {
			continue
		}
		desc := e.Description
		if !e.Enabled && e.HealthReason != "" {
			desc += " Currently disabled: " + e.HealthReason
		}
		var tags []map[string]string
		for _, t := range e.Tags {
			tags = append(tags, map[string]string{"name": t})
		}
		methods = append(methods, rpcMethod{
			Name: c.Method(), Summary: e.Title, Description: desc, Tags: tags, ParamStructure: "by-name",
			Params: paramsOf(e.InputSchema),
			Result: contentDescriptor{Name: c.ID() + ".result", Schema: e.OutputSchema},
		})
	}
	entry := json.RawMessage(`{"type":"object","description":"a registry entry: tool_id, name, title, description, version, transport, route, input_schema, output_schema, allowed_agents, tags, enabled, health, module, stats"}`)
	methods = append(methods,
		rpcMethod{Name: "openhuman.tool_registry_list", Summary: "Tool Registry List", ParamStructure: "by-name",
			Description: "Every MCP tool and controller-backed method this caller may use, with route, schemas, live health, module digest and call statistics.",
			Params:      []contentDescriptor{},
			Result: contentDescriptor{Name: "tool_registry.list.result", Schema: json.RawMessage(`{"type":"object","properties":{"tools":{"type":"array","items":` +
				string(entry) + `}},"required":["tools"]}`)}},
		rpcMethod{Name: "openhuman.tool_registry_get", Summary: "Tool Registry Get", ParamStructure: "by-name",
			Description: "One registry entry by tool_id, for example memory.search or tools.web_search.",
			Params: []contentDescriptor{{Name: "tool_id", Required: true, Description: "the registry id of a tool",
				Schema: json.RawMessage(`{"type":"string","minLength":1}`)}},
			Result: contentDescriptor{Name: "tool_registry.get.result", Schema: json.RawMessage(`{"type":"object","properties":{"tool":` +
				string(entry) + `},"required":["tool"]}`)}},
	)
	return map[string]any{
		"openrpc": OpenRPCVersion,
		"info": map[string]any{
			"title":       "openhuman-core",
			"version":     s.opts.Version,
			"description": "JSON-RPC 2.0 at POST /rpc with Authorization: Bearer <token>. Each openhuman.memory_tree_* and openhuman.tools_* method runs the same sandboxed module, with the same params and result, as the MCP tool its registry entry names.",
		},
		"servers": []map[string]string{{"name": "openhuman-core", "url": "/rpc"}},
		"methods": methods,
	}
}

// paramsOf turns an object input schema into by-name OpenRPC params, one per
// property in name order, required as the schema says.
func paramsOf(schema json.RawMessage) []contentDescriptor {
	var obj struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	out := []contentDescriptor{}
	if json.Unmarshal(schema, &obj) != nil {
		return out
	}
	req := map[string]bool{}
	for _, r := range obj.Required {
		req[r] = true
	}
	names := make([]string, 0, len(obj.Properties))
	for n := range obj.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var d struct {
			Description string `json:"description"`
		}
		json.Unmarshal(obj.Properties[n], &d)
		out = append(out, contentDescriptor{Name: n, Required: req[n], Description: strings.TrimSpace(d.Description), Schema: obj.Properties[n]})
	}
	return out
}
