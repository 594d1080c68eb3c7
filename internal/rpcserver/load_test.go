package rpcserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"
)

// loadResult summarises one load run.
type loadResult struct {
	Requests int
	Errors   []string
	Elapsed  time.Duration
	P50, P99 time.Duration
}

func (r loadResult) String() string {
	return fmt.Sprintf("%d requests in %v: %.0f req/s, p50 %.2f ms, p99 %.2f ms, %d errors",
		r.Requests, r.Elapsed.Round(time.Millisecond), float64(r.Requests)/r.Elapsed.Seconds(),
		float64(r.P50.Microseconds())/1000, float64(r.P99.Microseconds())/1000, len(r.Errors))
}

// runLoad has clients goroutines each send calls JSON-RPC requests (body(client, i)) over
// keep-alive connections and checks each answer with check. It returns the figures.
func runLoad(url, token string, clients, calls int, body func(c, i int) string, check func(resp []byte) error) loadResult {
	tr := &http.Transport{MaxIdleConns: clients * 2, MaxIdleConnsPerHost: clients * 2}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	lat := make([][]time.Duration, clients)
	var mu sync.Mutex
	var errs []string
	fail := func(s string) {
		mu.Lock()
		if len(errs) < 20 {
			errs = append(errs, s)
		}
		mu.Unlock()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				req, _ := http.NewRequest(http.MethodPost, url+"/rpc", bytes.NewBufferString(body(c, i)))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set(AgentHeader, fmt.Sprintf("load-%d", c))
				t0 := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					fail(err.Error())
					continue
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				lat[c] = append(lat[c], time.Since(t0))
				if err != nil || resp.StatusCode != 200 {
					fail(fmt.Sprintf("HTTP %d %v %.200s", resp.StatusCode, err, b))
					continue
				}
				if err := check(b); err != nil {
					fail(err.Error())
				}
			}
		}(c)
	}
	wg.Wait()
	res := loadResult{Elapsed: time.Since(start), Errors: errs}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	res.Requests = len(all)
	if len(all) > 0 {
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		res.P50 = all[len(all)/2]
		res.P99 = all[len(all)*99/100]
	}
	return res
}

// checkResult returns a check that wants a result containing key.
func checkResult(key string) func([]byte) error {
	return func(b []byte) error {
		var r rpcResp
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("decode %.200s: %v", b, err)
		}
		if r.Error != nil {
			return fmt.Errorf("rpc error %+v", *r.Error)
		}
		if !bytes.Contains(r.Result, []byte(key)) {
			return fmt.Errorf("result without %s: %.200s", key, r.Result)
		}
		return nil
	}
}

// TestConcurrentClients runs 50 clients × 100 calls (searches mixed with registry
// lists, which read the live statistics the calls update) against the HTTP layer.
func TestConcurrentClients(t *testing.T) {
	e := newTestEnv(t, false)
	res := runLoad(e.http.URL, testToken, 50, 100, func(c, i int) string {
		if i%10 == 9 {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"openhuman.tool_registry_list"}`, i)
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"openhuman.memory_tree_search","params":{"query":"q%d-%d","k":5}}`, i, c, i)
	}, func(b []byte) error {
		if bytes.Contains(b, []byte(`"tools"`)) {
			return checkResult(`"tool_id"`)(b)
		}
		return checkResult(`"chunks"`)(b)
	})
	t.Logf("fake dispatcher, 50 clients x 100 calls: %v", res)
	if res.Requests != 5000 || len(res.Errors) > 0 {
		t.Fatalf("load: %v; errors: %v", res, res.Errors)
	}
	// Every call reached the dispatcher with its client's label.
	e.host.mu.Lock()
	defer e.host.mu.Unlock()
	if len(e.host.calls) != 4500 {
		t.Fatalf("%d calls dispatched, want 4500", len(e.host.calls))
	}
	labels := map[string]bool{}
	for _, c := range e.host.calls {
		labels[c.Client] = true
	}
	if len(labels) != 50 || !labels["rpc:load-0"] {
		t.Fatalf("labels: %d distinct", len(labels))
	}
}
