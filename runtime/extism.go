package runtime

import (
	"context"
	"fmt"

	extism "github.com/extism/go-sdk"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// compileExtism loads an extism/1 module through the Extism SDK: allowed_hosts
// and allowed_paths empty (Extism's own http_request refuses every URL), the
// granted capability host functions registered under extism:host/user, memory and
// deadline from the module's limits, and the shared compilation cache.
func (m *module) compileExtism(ctx context.Context) error {
	wasm, err := m.instrumentStack(m.wasm)
	if err != nil {
		return err
	}
	manifest := extism.Manifest{
		Wasm:         []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
		AllowedHosts: nil,
		AllowedPaths: nil,
		Timeout:      uint64(m.info.Limits.TimeoutMS),
		Memory:       &extism.ManifestMemory{MaxPages: m.memoryLimitPages(), MaxVarBytes: 64 << 10},
	}
	var funcs []extism.HostFunction
	for _, c := range m.grant.Capabilities {
		for _, fn := range abi.CapabilityFunctions[c] {
			hf := extism.NewHostFunctionWithStack(fn, m.extismFunc(fn), []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
			hf.SetNamespace(abi.ExtismHostModule)
			funcs = append(funcs, hf)
		}
	}
	plugin, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{
		RuntimeConfig: m.runtimeConfig(),
		EnableWasi:    true,
	}, funcs)
	if err != nil {
		return fmt.Errorf("compiling Extism module %s: %w", m.info.Name, err)
	}
	return m.keep(ctx, nil, nil, plugin)
}

// extismFunc adapts a host function to Extism's calling convention: the input is a
// block in the Extism kernel's memory, the output a new block.
func (m *module) extismFunc(fn string) extism.HostFunctionStackCallback {
	return func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
		if cs := callStateFrom(ctx); cs.phaseOf() != phaseCall {
			panic(m.funcs.violation(ctx, cs, fn))
		}
		var reply []byte
		n, err := p.Length(stack[0])
		switch {
		case err != nil:
			reply = errReply(abi.CodeInvalidParams, "%s: reading the request: %v", fn, err)
		case n > MaxMessageBytes:
			reply = errReply(abi.CodeInvalidParams, "%s request of %d bytes exceeds the %d-byte limit", fn, n, MaxMessageBytes)
		default:
			req, err := p.ReadBytes(stack[0])
			if err != nil {
				reply = errReply(abi.CodeInvalidParams, "%s: reading the request: %v", fn, err)
			} else {
				reply = m.funcs.serve(ctx, fn, req)
			}
		}
		off, err := p.WriteBytes(reply)
		if err != nil {
			panic(fmt.Errorf("host function %s: delivering the reply: %w", fn, err))
		}
		stack[0] = off
	}
}

// newExtismInstance makes a plugin instance with the sandbox's WASI configuration.
func (m *module) newExtismInstance(ctx context.Context, cp *extism.CompiledPlugin) (*instance, error) {
	stderr := newHeadBuffer(stderrBytes)
	p, err := cp.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: sandboxModuleConfig(stderr)})
	if err != nil {
		return nil, withStderr(fmt.Errorf("instantiating Extism module %s: %w", m.info.Name, err), stderr)
	}
	p.SetLogger(func(level extism.LogLevel, msg string) {
		lvl := int32(abi.LogInfo)
		switch level {
		case extism.LogLevelTrace, extism.LogLevelDebug:
			lvl = abi.LogDebug
		case extism.LogLevelWarn:
			lvl = abi.LogWarn
		case extism.LogLevelError:
			lvl = abi.LogError
		}
		m.funcs.log(context.Background(), lvl, []byte(msg))
	})
	return &instance{plugin: p, stderr: stderr}, nil
}

// invokeExtism calls the tool's export with the CallRequest as input. The output
// lives in the Extism kernel's memory (bounded by the module's memory limit); its
// size is checked before it is decoded.
func (m *module) invokeExtism(ctx context.Context, in *instance, export string, req []byte, maxResult int) ([]byte, error) {
	if cs := callStateFrom(ctx); cs != nil {
		cs.phase.set(phaseCall)
		defer cs.phase.set(phaseNone)
	}
	_, out, err := in.plugin.CallWithContext(ctx, export, req)
	if err != nil {
		return nil, bound(err)
	}
	if len(out) > maxResult {
		return nil, &oversizeError{n: int64(len(out)), limit: maxResult}
	}
	return out, nil
}
