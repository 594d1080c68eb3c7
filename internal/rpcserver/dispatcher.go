package rpcserver

import (
	"context"

	"github.com/openhuman/openhuman-core/runtime"
)

// Dispatcher runs tool calls and reports the live state of the tool modules.
// *runtime.Host implements it.
type Dispatcher interface {
	// Tools lists the tools the dispatcher serves now (searxng_search only when enabled).
	Tools() []runtime.Tool
	// Call runs one tool call. A tool-reported failure is an Outcome with ToolError;
	// err is for calls that did not reach the module or did not finish (wrapping
	// runtime.ErrUnknownTool for a tool nobody serves).
	Call(ctx context.Context, call runtime.Call) (*runtime.Outcome, error)
	// Status reports every module the dispatcher knows, including refused, failed and
	// disabled ones.
	Status() []runtime.ModuleStatus
}
