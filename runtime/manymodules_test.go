package runtime

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/examples/hostile/wasmgen"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// TestManyModulesNoDeadlock (finding 12): 300 admitted modules, with the
// compile workers held until initialize is answered (Options.Hold), do not
// block New: on 3656465 the 257th module blocked on the full compile queue
// before initialize could be answered.
func TestManyModulesNoDeadlock(t *testing.T) {
	files := map[string][]byte{}
	var entries []string
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("m%03d.wasm", i)
		files[name] = pack(t, wasmgen.Uses(""), manifest(abi.Version, nil, "memory_mib = 4", tool{name: fmt.Sprintf("t%03d", i)}))
		entries = append(entries, entry(name, files[name]))
	}
	dir, pol := thirdParty(t, files), policyFor(t, entries...)
	hold := make(chan struct{})
	made := make(chan *Host, 1)
	go func() {
		h, _ := newHost(t, Options{ToolsDir: dir, Policy: pol, CacheDir: "-", Hold: hold})
		made <- h
	}()
	var h *Host
	select {
	case h = <-made:
	case <-time.After(60 * time.Second):
		close(hold)
		t.Fatal("New did not return within 60 s with 300 modules held before initialize")
	}
	if n := len(h.Tools()); n != 300 {
		t.Errorf("%d tools listed before compiling, want 300", n)
	}
	close(hold) // initialize answered
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// Its oh_call returns an empty result: a malformed response, from the module.
	if _, err := call(t, h, "t299", `{}`); ModuleDigest(err) != digest(files["m299.wasm"]) {
		t.Errorf("t299 did not run in its module: %v", err)
	}
}
