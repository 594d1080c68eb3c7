package policy

// HostBudget bounds what one call may ask of the host through capability host
// functions (issue 29, findings 5 and 13: a memory.read module made 3,000
// recalls in 4 s, each one a request to the embedding endpoint when one is
// configured). A host call beyond it is not served: the guest gets an
// "unavailable" error reply, and the refusal is counted in the call's usage.
type HostBudget struct {
	// Calls is the most capability host calls one call may make.
	Calls int
	// Bytes is the most reply bytes the host may return to one call.
	Bytes int64
}

// Defaults and caps of the per-call host budget. The first-party tools make
// one to three host calls a call and read at most a few hundred KB; a policy
// entry may lower or raise them (max_host_calls, max_host_bytes) up to the caps.
const (
	DefaultMaxHostCalls = 256
	DefaultMaxHostBytes = 32 << 20
	CapMaxHostCalls     = 100_000
	CapMaxHostBytes     = 1 << 30
)

// DefaultHostBudget is the budget of a module whose policy entry sets none.
func DefaultHostBudget() HostBudget {
	return HostBudget{Calls: DefaultMaxHostCalls, Bytes: DefaultMaxHostBytes}
}

// Egress says, for each capability host function that can send data beyond
// the local store, where it goes: `tools audit` shows it with the import, so a
// reviewer sees that memory.read is not only a read of local data when an
// embedder is configured.
var Egress = map[string]string{
	"memory_recall":  "the configured embedding endpoint (when an embedder is configured, a query that is text of the client's own arguments is sent there; any other query is ranked offline and never leaves the process)",
	"searxng_search": "the configured SearXNG instance (each call sends its query there)",
}
