package runtime

import (
	"time"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Engines (Options.Engine): how a module's code is run.
const (
	// EngineDefault runs the first-party modules (Options.Builtins) whose code
	// is at most interpretMaxCodeBytes on wazero's interpreter and every other
	// module with its optimizing compiler, the code loaded from the compilation
	// cache when the cache holds it. A first-party module is a few kilobytes of C
	// that hands its request to a host function: a call spends microseconds in
	// it on either engine, while compiling it (runtime, cache MAC check, code)
	// was ≈ 1.5 ms of CPU on the path to the first call of every start
	// (runtime/RATIONALE.md, "Compiling: engines, cache, workers, deadlines").
	// Such a module is never compiled, so the cache is not opened for it and a
	// start with an empty cache is as fast as one with a warm cache.
	EngineDefault = ""
	// EngineCompiled runs every module with the optimizing compiler (what the
	// default did before first-party modules ran on the interpreter).
	EngineCompiled = "compiled"
	// EngineTiered is the name the default had while first-party modules were
	// large Go guests served interpreted until their compile was ready.
	//
	// Deprecated: use EngineDefault.
	EngineTiered = EngineDefault
	// EngineInterpreter serves every openhuman/1 module from the interpreter only
	// and never compiles it: calls are slower but nothing waits for a compile.
	// The sandbox tests run under it to show the limits do not depend on the engine.
	EngineInterpreter = "interpreter"
)

// interpretMaxCodeBytes bounds the code of a first-party module run on the
// interpreter under EngineDefault. The first-party modules have 3 KB and 1 KB of
// code; a large guest given as a builtin (a Go guest has megabytes) is compiled,
// since the interpreter runs guest code an order of magnitude slower (echoing
// 0.9 MB through the Go echo guest outlived its 15 s deadline).
const interpretMaxCodeBytes = 64 << 10

// interpreted reports whether m runs on the interpreter: every openhuman/1
// module under EngineInterpreter, the small first-party ones under
// EngineDefault (Extism modules are always compiled).
func (m *module) interpreted() bool {
	if m.manifest == nil || m.manifest.ABI == abi.ExtismVersion {
		return false
	}
	switch m.host.opt.Engine {
	case EngineInterpreter:
		return true
	case EngineDefault:
		return m.info.Origin == OriginBuiltin && m.smallCode
	}
	return false
}

// ms is d in milliseconds, for logs.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
