package runtime

import (
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// A third-party module is refused at load, with the reason, when one of its tool
// names would collide with another tool's once spelled portably (memory.search
// and memory_search), or would be longer than the 64 characters Claude Desktop
// accepts.
func TestPortableNameRefusals(t *testing.T) {
	builtinMod := pack(t, guest(t, "echo"), manifest(abi.Version, []string{abi.CapMemoryRead}, "", tool{name: "mem.echo"}))
	for name, tc := range map[string]struct {
		tools []tool
		want  string
	}{
		"collides": {[]tool{{name: "mem_echo"}}, `tool name "mem_echo" has the portable name "mem_echo" (served to clients that refuse dots), which is also that of mem.echo of b.wasm`},
		"within":   {[]tool{{name: "a.b"}, {name: "a_b"}}, `which is also that of a.b`},
		"too-long": {[]tool{{name: "x." + strings.Repeat("y", 63)}}, "must match"}, // the manifest check already caps names at 64
	} {
		t.Run(name, func(t *testing.T) {
			mod := pack(t, guest(t, "echo"), manifest(abi.Version, []string{abi.CapMemoryRead}, "", tc.tools...))
			h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"third.wasm": mod}),
				Policy: policyFor(t, entry("third.wasm", mod, "memory.read")), Builtins: []BuiltinModule{builtinModule("b.wasm", builtinMod)}})
			st := statusOf(t, h, "third.wasm")
			if st.State != StateRefused || !strings.Contains(st.Error, tc.want) {
				t.Errorf("state %s, error %q; want refused with %q", st.State, st.Error, tc.want)
			}
			if tools := h.Tools(); len(tools) != 1 || tools[0].Name != "mem.echo" {
				t.Errorf("tools = %+v", tools)
			}
		})
	}
}
