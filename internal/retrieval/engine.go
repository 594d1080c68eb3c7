package retrieval

// Engine ranks a backend's chunks for memory.search and memory.recall. It holds
// its parameters by value (DefaultParams, or a copy a caller changed) and nothing
// of any store: every call names the index.Backend it reads, one per read call.
// An Engine is safe for concurrent use.
type Engine struct {
	p Params
}

// New returns an engine with parameters p.
func New(p Params) *Engine { return &Engine{p: p} }

// Params returns a copy of the engine's parameters.
func (e *Engine) Params() Params { return e.p }
