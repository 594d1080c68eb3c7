package runtime

import (
	"time"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Engines (Options.Engine): how a module's code is run.
const (
	// EngineCompiled (the default) runs every module with wazero's optimizing
	// compiler, its code loaded from the compilation cache when the cache holds
	// it. A first-party module (a few kilobytes of C) compiles in a few
	// milliseconds, so nothing is served from the interpreter while it compiles
	// (runtime/RATIONALE.md, "Start at the floor").
	EngineCompiled = ""
	// EngineTiered is the name the default had while first-party modules were
	// large Go guests served interpreted until their compile was ready; it is
	// now the same as EngineCompiled.
	//
	// Deprecated: use EngineCompiled.
	EngineTiered = EngineCompiled
	// EngineInterpreter serves every openhuman/1 module from the interpreter only
	// and never compiles it: calls are slower but nothing waits for a compile.
	// The sandbox tests run under it to show the limits do not depend on the engine.
	EngineInterpreter = "interpreter"
)

// interpreted reports whether m runs on the interpreter (EngineInterpreter; Extism
// modules are always compiled).
func (m *module) interpreted() bool {
	return m.host.opt.Engine == EngineInterpreter && m.manifest != nil && m.manifest.ABI != abi.ExtismVersion
}

// ms is d in milliseconds, for logs.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
