package runtime

import (
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestHostCallBudget (findings 5, 13): a module calling memory_recall 3,000
// times in one call is served only its budget — the default, or the policy
// entry's max_host_calls — and the rest are refused and counted. On 3656465
// all 3,000 were served (each one an embedder request when one is configured).
func TestHostCallBudget(t *testing.T) {
	wasm := pack(t, wasmgen.HostLoop(abi.FnMemoryRecall, 3000), manifest(abi.Version, []string{abi.CapMemoryRead}, "memory_mib = 4", tool{name: "recaller"}))
	for _, c := range []struct {
		entry  string
		served int
	}{
		{entry("recaller.wasm", wasm, abi.CapMemoryRead), 256},
		{entry("recaller.wasm", wasm, abi.CapMemoryRead) + "max_host_calls = 10\n", 10},
	} {
		h, _ := newHost(t, Options{ToolsDir: thirdParty(t, map[string][]byte{"recaller.wasm": wasm}), Policy: policyFor(t, c.entry), CacheDir: "-"})
		_, err := call(t, h, "recaller", `{}`)
		if err == nil || !strings.Contains(err.Error(), "no result object") && !strings.Contains(err.Error(), "malformed") {
			t.Fatalf("want a malformed-response failure, got %v", err)
		}
		u := UsageOf(err)
		if u.HostCalls[abi.FnMemoryRecall] != c.served || u.Refused[abi.FnMemoryRecall] != 3000-c.served {
			t.Errorf("served %d, refused %d; want %d and %d", u.HostCalls[abi.FnMemoryRecall], u.Refused[abi.FnMemoryRecall], c.served, 3000-c.served)
		}
	}
}
