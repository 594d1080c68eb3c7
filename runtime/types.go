package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/policy"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// ErrUnknownTool is returned (wrapped) by Host.Call for a tool name no loaded module
// serves (including searxng_search while SearXNG is disabled).
var ErrUnknownTool = errors.New("unknown tool")

// Annotations are the MCP tool annotations a manifest declares (policy owns the
// manifest model; the runtime serves it as is).
type Annotations = policy.Annotations

// Limits bound one call into a module.
type Limits = policy.Limits

// Module origins.
const (
	OriginBuiltin   = "builtin"
	OriginDirectory = "directory"
)

// ModuleInfo describes the module behind a tool, for registries, audits and logs.
type ModuleInfo struct {
	Name         string   `json:"name"`           // file name or builtin name, e.g. "memory.wasm"
	File         string   `json:"file,omitempty"` // path on disk for directory modules
	SHA256       string   `json:"sha256"`
	ABI          string   `json:"abi"`
	Capabilities []string `json:"capabilities"` // granted (== requested when loaded)
	Limits       Limits   `json:"limits"`
	Origin       string   `json:"origin"` // OriginBuiltin or OriginDirectory
	Signer       string   `json:"signer,omitempty"`
}

// Tool is one tool served by a module, described by the module's manifest.
type Tool struct {
	Name          string          `json:"name"`
	Title         string          `json:"title"`
	Description   string          `json:"description"`
	InputSchema   json.RawMessage `json:"inputSchema"`
	OutputSchema  json.RawMessage `json:"outputSchema"`
	Annotations   Annotations     `json:"annotations"`
	AllowedAgents []string        `json:"allowed_agents"`
	Module        ModuleInfo      `json:"module"`
}

// Call is one tool invocation.
type Call struct {
	Tool      string
	Arguments json.RawMessage // a JSON object; nil means {}
	Client    string          // provenance label, e.g. "mcp:claude-ai"
	RequestID string
	// Owner is who may run in an instance an earlier call used (its linear
	// memory may hold that call's data): an identity the client cannot choose,
	// set by the server (an MCP session). Empty: Client, which a client names
	// itself, so two clients of one name would share instances.
	Owner string
}

// owner is the instance owner of c (Owner, or Client when it is empty).
func (c Call) owner() string {
	if c.Owner != "" {
		return c.Owner
	}
	return c.Client
}

// Usage counts what a call did through host functions, for the audit log.
type Usage struct {
	HostCalls map[string]int `json:"host_calls,omitempty"` // host function name -> count
	BytesIn   int64          `json:"bytes_in"`             // bytes the host returned to the guest
	BytesOut  int64          `json:"bytes_out"`            // bytes the guest passed to the host
	// Refused counts capability host calls that were not served: made outside
	// oh_call (the instance was stopped) or beyond the call's host-call budget.
	Refused map[string]int `json:"refused,omitempty"`
}

// Outcome is the result of a call that reached the module. Exactly one of Result and
// ToolError is set.
type Outcome struct {
	Result json.RawMessage // the tool's result object
	// Compact reports that the runtime found Result valid and compact JSON
	// (jsoncheck.Check), so a consumer need not scan it again to learn either.
	Compact      bool
	ToolError    *abi.Error // an error the tool reported (invalid_params, not_found, ...)
	Usage        Usage
	ModuleSHA256 string
	Duration     time.Duration
}

// CallFailure is the error of a call that reached a module and failed in its
// sandbox (trap, deadline, memory limit, cancellation, malformed result): it names
// the module's digest for the audit log. Error and Unwrap are those of Err.
type CallFailure struct {
	ModuleSHA256 string
	Err          error
	// Kind is what kind of failure it is (audit.FailureTimeout, FailureMemory,
	// FailureUnavailable; "" for any other): the servers tell clients by kind,
	// never by searching the error's text.
	Kind string
	// Usage is what the call did through host functions before it failed: its
	// reads may have reached the guest (and, through its error, the client).
	Usage Usage
}

func (e *CallFailure) Error() string { return e.Err.Error() }

// FailureKind is e's Kind (audit.FailureKind reads it).
func (e *CallFailure) FailureKind() string { return e.Kind }
func (e *CallFailure) Unwrap() error       { return e.Err }

// ModuleDigest is the sha256 of the module a failed call ran in, or "" when the
// call did not reach one.
func ModuleDigest(err error) string {
	var cf *CallFailure
	if errors.As(err, &cf) {
		return cf.ModuleSHA256
	}
	return ""
}

// UsageOf is the host-function usage of a call that failed in its module (zero
// when err is not a *CallFailure).
func UsageOf(err error) Usage {
	var cf *CallFailure
	if errors.As(err, &cf) {
		return cf.Usage
	}
	return Usage{}
}

// Load states of a module.
const (
	StateCompiling = "compiling"
	StateReady     = "ready"
	StateRefused   = "refused" // failed the static gate, policy or signature check
	StateFailed    = "failed"  // failed to compile or instantiate
	StateDisabled  = "disabled"
)

// CallStats are call statistics, of a module or of one of its tools.
type CallStats struct {
	Count         int64     `json:"count"`
	Errors        int64     `json:"errors"`
	P50MS         float64   `json:"p50_ms"`
	P95MS         float64   `json:"p95_ms"`
	LastError     string    `json:"last_error,omitempty"`
	LastErrorAt   time.Time `json:"last_error_at,omitzero"`
	LastSuccessAt time.Time `json:"last_success_at,omitzero"`
	// ConsecutiveErrors counts failures since the last success.
	ConsecutiveErrors int64 `json:"consecutive_errors"`
}

// ModuleStatus is the live state of one module.
type ModuleStatus struct {
	Module ModuleInfo `json:"module"`
	Tools  []string   `json:"tools"`
	State  string     `json:"state"`
	Error  string     `json:"error,omitempty"` // why it was refused or failed
	Stats  CallStats  `json:"stats"`
	// ToolStats are the statistics of each tool of the module that has been called
	// (a module may serve several tools; Stats sums them).
	ToolStats map[string]CallStats `json:"tool_stats,omitempty"`
}

// SearxngClient is the host side of the web.searxng capability: one GET built by
// the host (see internal/searxng).
type SearxngClient interface {
	Search(ctx context.Context, req abi.SearxngRequest) (*abi.SearxngReply, error)
}

// ErrAgentNotAllowed is matched (errors.Is) by an *AgentRefusal: the policy's
// allowed_agents for the tool's module does not admit the caller.
var ErrAgentNotAllowed = errors.New("agent not allowed")

// AgentRefusal is the error of a call whose client label the tool's
// allowed_agents does not admit. Its text names the policy entry and is meant for
// the client as is (it carries no host path beyond the policy file's line).
type AgentRefusal struct {
	Tool    string
	Client  string
	Allowed []string
	Entry   string // "policy.toml:4 ([[module]] file = \"x.wasm\")", "" for first-party
}

func (e *AgentRefusal) Error() string {
	where := "the policy"
	if e.Entry != "" {
		where = "the policy entry " + e.Entry
	}
	return fmt.Sprintf("agent %q may not call %s: %s sets allowed_agents = %s for it; add %q there to allow this agent",
		e.Client, e.Tool, where, quoteAgents(e.Allowed), e.Client)
}

// Is makes errors.Is(err, ErrAgentNotAllowed) true.
func (e *AgentRefusal) Is(target error) bool { return target == ErrAgentNotAllowed }

func quoteAgents(list []string) string {
	q := make([]string, len(list))
	for i, a := range list {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
