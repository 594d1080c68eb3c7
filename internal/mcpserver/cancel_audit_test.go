package mcpserver

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openhuman/openhuman-core/runtime"
)

// failureDispatcher returns what the real runtime returns for a call that ended in
// its module: the error wrapped in a *runtime.CallFailure naming the module's digest
// (internal/rpcserver's TestCancelledCallIsQuietAndAudited checks that on the real
// runtime).
type failureDispatcher struct{ *fakeDispatcher }

func (d failureDispatcher) Call(ctx context.Context, c runtime.Call) (*runtime.Outcome, error) {
	out, err := d.fakeDispatcher.Call(ctx, c)
	if err != nil && !errors.Is(err, runtime.ErrUnknownTool) {
		err = &runtime.CallFailure{ModuleSHA256: "sha-" + c.Tool, Err: err}
	}
	return out, err
}

// A call the client cancels is a normal end: logged at debug, not WARN, and its
// audit line says "cancelled" with the module's digest.
func TestCancelledCallAuditedQuietly(t *testing.T) {
	f := newFake("test.slow")
	s, al, auditPath, logs := newServer(t, f, func(o *Options) { o.Dispatcher = failureDispatcher{f} })
	cs := connectClient(t, s, "cursor", nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test.slow", Arguments: map[string]any{}})
		errc <- err
	}()
	select {
	case <-f.started:
	case <-time.After(30 * time.Second):
		t.Fatal("slow tool never started")
	}
	cancel()
	<-f.slowErr
	<-errc
	// The handler logs its call line right after writing the audit entry.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), "tool=test.slow"); {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled call was never logged:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	al.Close()
	data, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.Contains(text, `"outcome":"cancelled"`) || !strings.Contains(text, `"module_sha256":"sha-test.slow"`) {
		t.Errorf("audit line of a cancelled call:\n%s", text)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a cancellation was logged as a warning:\n%s", logs.String())
	}
}
