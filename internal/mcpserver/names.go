package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/internal/toolname"
)

// toolNames is one refresh's view of both spellings of every served tool.
type toolNames struct {
	portableOf  map[string]string // spec name -> portable name
	canonicalOf map[string]string // portable name -> spec name (only where they differ)
	toPortable  *strings.Replacer // rewrites spec names in text to portable ones
	// ordered is the portable listing, in the dispatcher's order, made on the
	// first tools/list of a portable session: rewriting every description and
	// schema was ≈ 0.3 ms of each start, before initialize, for a listing most
	// sessions never ask for.
	ordered func() []*mcp.Tool
}

// buildNames computes the portable spellings of ordered (already free of
// duplicates). A tool whose portable name is too long or collides with another
// tool's name is dropped from both listings and reported in skip.
func buildNames(ordered []*mcp.Tool) (names toolNames, keep []*mcp.Tool, skip map[string]string) {
	names = toolNames{portableOf: map[string]string{}, canonicalOf: map[string]string{}}
	skip = map[string]string{}
	taken := map[string]string{} // both spellings of each tool kept -> spec name
	var pairs []string
	for _, mt := range ordered {
		// The first tool in the dispatcher's order (first-party before
		// third-party) keeps a spelling; a later one that would share it goes.
		p := toolname.Portable(mt.Name)
		if err := toolname.Check(mt.Name); err != nil {
			skip[mt.Name] = err.Error()
			continue
		}
		if other, ok := taken[p]; ok {
			skip[mt.Name] = fmt.Sprintf("its portable name %q is also that of %q", p, other)
			continue
		}
		if other, ok := taken[mt.Name]; ok {
			skip[mt.Name] = fmt.Sprintf("its name is the portable name of %q", other)
			continue
		}
		taken[p], taken[mt.Name] = mt.Name, mt.Name
		names.portableOf[mt.Name] = p
		if p != mt.Name {
			names.canonicalOf[p] = mt.Name
			pairs = append(pairs, mt.Name, p)
		}
		keep = append(keep, mt)
	}
	// Longer names first, so that a name that begins another is not replaced
	// inside it.
	idx := make([]int, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		idx = append(idx, i)
	}
	sort.SliceStable(idx, func(a, b int) bool { return len(pairs[idx[a]]) > len(pairs[idx[b]]) })
	sorted := make([]string, 0, len(pairs))
	for _, i := range idx {
		sorted = append(sorted, pairs[i], pairs[i+1])
	}
	names.toPortable = strings.NewReplacer(sorted...)
	n := names
	names.ordered = sync.OnceValue(func() []*mcp.Tool {
		out := make([]*mcp.Tool, 0, len(keep))
		for _, mt := range keep {
			out = append(out, n.portableTool(mt))
		}
		return out
	})
	return names, keep, skip
}

// portableTool is mt as a portable session lists it: its portable name, and the
// other tools named the same way in its description and schemas.
func (n toolNames) portableTool(mt *mcp.Tool) *mcp.Tool {
	c := *mt
	c.Name = n.portableOf[mt.Name]
	c.Description = n.toPortable.Replace(mt.Description)
	c.InputSchema = n.rewriteRaw(mt.InputSchema)
	c.OutputSchema = n.rewriteRaw(mt.OutputSchema)
	return &c
}

func (n toolNames) rewriteRaw(v any) any {
	raw, ok := v.(json.RawMessage)
	if !ok || len(raw) == 0 {
		return v
	}
	out := n.toPortable.Replace(string(raw))
	if out == string(raw) || !json.Valid([]byte(out)) {
		return v
	}
	return json.RawMessage(out)
}

// sessionPortable reports whether ss lists portable names.
func (s *Server) sessionPortable(ss *mcp.ServerSession) bool {
	if ss == nil {
		return PortableNamesFor(s.opts.ToolNames, "")
	}
	p := ss.InitializeParams()
	if p == nil || p.ClientInfo == nil {
		return PortableNamesFor(s.opts.ToolNames, "")
	}
	return PortableNamesFor(s.opts.ToolNames, p.ClientInfo.Name)
}

// shownName is how a session names the tool whose spec name is name.
func (s *Server) shownName(portable bool, name string) string {
	if !portable {
		return name
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.names.portableOf[name]; ok {
		return p
	}
	return name
}

// shownText rewrites the spec's tool names in text the way a portable session
// lists them.
func (s *Server) shownText(portable bool, text string) string {
	if !portable {
		return text
	}
	s.mu.Lock()
	r := s.names.toPortable
	s.mu.Unlock()
	if r == nil {
		return text
	}
	return r.Replace(text)
}

// namesMiddleware lets every session call a tool by either spelling (the
// handler is registered under the spec's name) and gives a portable session
// instructions that name tools as it lists them.
func (s *Server) namesMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			cr, ok := req.(*mcp.CallToolRequest)
			if !ok || cr.Params == nil {
				break
			}
			s.mu.Lock()
			_, known := s.byName[cr.Params.Name]
			canon, alias := s.names.canonicalOf[cr.Params.Name]
			s.mu.Unlock()
			switch {
			case known:
			case alias:
				cr.Params.Name = canon
			default:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("unknown tool %q: tools/list names the tools this server offers", clip(cr.Params.Name))}
			}
		case "initialize":
			res, err := next(ctx, method, req)
			ir, ok := res.(*mcp.InitializeResult)
			if err != nil || !ok || ir == nil {
				return res, err
			}
			client := ""
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil && p.ClientInfo != nil {
				client = p.ClientInfo.Name
			}
			if PortableNamesFor(s.opts.ToolNames, client) {
				c := *ir
				c.Instructions = s.shownText(true, ir.Instructions)
				return &c, nil
			}
			return res, nil
		}
		return next(ctx, method, req)
	}
}

// listedTools is the tool list a session sees, before allowed_agents.
func (s *Server) listedTools(portable bool) (tools, canonical []*mcp.Tool) {
	if portable {
		return s.names.ordered(), s.ordered
	}
	return s.ordered, s.ordered
}
