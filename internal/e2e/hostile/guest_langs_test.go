//go:build linux

package hostile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/guestbuild"
)

// guestAttempts are the ABI breaks the hostile Rust and AssemblyScript guests
// (testdata/guest-rust, testdata/guest-as) make, one per call, by `try`.
var guestAttempts = []string{
	"result_out_of_bounds",  // a result pointer past the end of memory
	"result_too_big",        // a 2 MiB result (the cap is 1 MiB)
	"not_json",              // result bytes that are not a response
	"request_out_of_bounds", // a host call whose request lies outside memory
	"request_huge",          // a host call with a 4 GiB request
	"alloc_lies",            // oh_alloc answers the host's reply with an address outside memory
	"recurse",               // unbounded recursion
	"grow",                  // unbounded allocation
}

// buildHostileGuest builds one hostile guest from source; a missing toolchain
// skips (and fails under CI=true, where .ci/run installs it).
func buildHostileGuest(t *testing.T, lang string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var mod []byte
	var err error
	switch lang {
	case "rust":
		mod, err = guestbuild.BuildRust(ctx, filepath.Join("testdata", "guest-rust"), "hostile_rust", t.TempDir())
	case "as":
		entry, _ := filepath.Abs(filepath.Join("testdata", "guest-as", "hostile.ts"))
		mod, err = guestbuild.BuildAS(ctx, repoRoot, entry, "../../../../../sdk/assemblyscript/assembly/abi/abort")
	}
	if errors.Is(err, guestbuild.ErrMissing) && os.Getenv("CI") != "true" {
		t.Skipf("not run: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// TestGuestLanguagesBreakingTheABI: a hostile guest in each new toolchain
// (Rust through its SDK's crate, AssemblyScript through its SDK) breaks the
// ABI from that language, call after call, in one `mcp` session. Every attempt
// fails only its own call (an error naming what went wrong, within the 2 s
// deadline + 1 s), a well-formed call on the same tool succeeds after each,
// the server's resident size grows by less than 64 MiB + memory_mib, and the
// audit log records every call.
func TestGuestLanguagesBreakingTheABI(t *testing.T) {
	h := newHome(t)
	var mods []module
	for _, lang := range []string{"rust", "as"} {
		t.Run("build-"+lang, func(t *testing.T) {
			mods = append(mods, module{file: "guest-" + lang + ".wasm", raw: buildHostileGuest(t, lang), tool: "guest." + lang,
				caps: memRead, pinned: true, limits: "timeout_ms = 2000\nmemory_mib = 8"})
		})
	}
	if len(mods) == 0 {
		t.Skip("no guest toolchain")
	}
	h.install(t, mods...)
	c, why := startMCP(t, h, 5*time.Minute, 60*time.Second, "hostile")
	if why != "" {
		t.Fatal(why)
	}
	if r, why := c.call("tools/list", map[string]any{}, 30*time.Second); r == nil {
		t.Fatal(why)
	}
	base := c.resetPeak()
	ids := map[string]bool{}
	for _, m := range mods {
		for _, attempt := range guestAttempts {
			r, took, why := c.toolCall(m.tool, map[string]any{"try": attempt}, 20*time.Second)
			if r == nil {
				t.Fatalf("%s %s: %s\n%s", m.tool, attempt, why, c.logTail())
			}
			text := failedText(r)
			if text == "" {
				t.Errorf("%s %s succeeded: %.300v", m.tool, attempt, r)
			} else {
				t.Logf("%s %s → %.200s (%v)", m.tool, attempt, text, took.Round(time.Millisecond))
			}
			if took > 2*time.Second+deadlineSlack {
				t.Errorf("%s %s answered after %v; its deadline is 2 s", m.tool, attempt, took)
			}
			r, _, why = c.toolCall(m.tool, map[string]any{"try": "ok"}, 20*time.Second)
			if r == nil || failedText(r) != "" || !strings.Contains(fmt.Sprint(r["result"]), "ok:true") {
				t.Errorf("%s: the well-formed call after %s: %v %.300v", m.tool, attempt, why, r)
			}
		}
	}
	grew := c.peakRSS.Load() - base
	t.Logf("VmRSS %s before the attempts, peak growth %s", mib(base), mib(grew))
	if bound := int64(64+8) << 10; grew > bound {
		t.Errorf("mcp's resident size grew by %s over the attempts (bound %s)", mib(grew), mib(bound))
	}
	c.stdin.Close()
	c.exited(20 * time.Second)
	failed := 0
	for _, l := range h.auditLines(t) {
		if tool, _ := l["tool"].(string); strings.HasPrefix(tool, "guest.") {
			ids[fmt.Sprint(l["request_id"])] = true
			if e, _ := l["error"].(string); e != "" {
				failed++
			}
		}
	}
	if want := len(mods) * len(guestAttempts); failed != want {
		t.Errorf("the audit log records %d failed guest calls, want %d", failed, want)
	}
}
