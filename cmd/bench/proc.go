package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is one stdio MCP server process spoken to with raw JSON-RPC lines, so
// that the timings are the server's, not a client library's.
type server struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	id    int
	start time.Time
	errb  bytes.Buffer
}

// spawn starts bin with args and env (added to the bench's own environment).
func spawn(bin string, args, env []string) (*server, error) {
	s := &server{}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stderr = &s.errb
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.out = bufio.NewReaderSize(stdout, 1<<20)
	s.start = time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return s, nil
}

// request sends one request and waits for its response, skipping notifications.
// It returns the result (or an error for a JSON-RPC error) and the round trip.
func (s *server) request(method string, params any) (json.RawMessage, time.Duration, error) {
	s.id++
	p, err := json.Marshal(params)
	if err != nil {
		return nil, 0, err
	}
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", s.id, method, p)
	t0 := time.Now()
	if _, err := io.WriteString(s.in, line); err != nil {
		return nil, 0, fmt.Errorf("%s: write: %w (stderr: %s)", method, err, s.stderr())
	}
	want := strconv.Itoa(s.id)
	for {
		b, err := s.out.ReadBytes('\n')
		if err != nil {
			return nil, 0, fmt.Errorf("%s: read: %w (stderr: %s)", method, err, s.stderr())
		}
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			return nil, 0, fmt.Errorf("%s: bad frame %.200q: %w", method, b, err)
		}
		if string(resp.ID) != want {
			continue
		}
		d := time.Since(t0)
		if resp.Error != nil {
			return nil, d, fmt.Errorf("%s: %s", method, resp.Error.Message)
		}
		return resp.Result, d, nil
	}
}

func (s *server) notify(method string) error {
	_, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
	return err
}

// initialize sends initialize and notifications/initialized.
func (s *server) initialize() error {
	_, _, err := s.request("initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "bench", "version": "0"},
	})
	if err != nil {
		return err
	}
	return s.notify("notifications/initialized")
}

// call runs tools/call and fails on a tool error.
func (s *server) call(tool string, args any) (json.RawMessage, time.Duration, error) {
	res, d, err := s.request("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return nil, d, err
	}
	var r struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, d, fmt.Errorf("%s: %w", tool, err)
	}
	if r.IsError {
		msg := ""
		if len(r.Content) > 0 {
			msg = r.Content[0].Text
		}
		return res, d, fmt.Errorf("%s: tool error: %s", tool, msg)
	}
	return res, d, nil
}

func (s *server) stderr() string {
	return strings.TrimSpace(tail(s.errb.String(), 600))
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// memKB reads VmRSS, VmHWM, RssAnon and RssFile (KiB) of the running server:
// anon is the heap and stacks, file the pages of the binary (and any mapped
// file) it has touched.
func (s *server) memKB() (rss, hwm, anon, file int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0, 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		case "RssAnon:":
			anon = v
		case "RssFile:":
			file = v
		}
	}
	return rss, hwm, anon, file
}

// close ends the session (stdin EOF) and waits for the process, killing it after 10 s.
func (s *server) close() error {
	s.in.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
		return errors.New("server did not exit within 10 s of end of input; killed")
	}
}

// runTimed runs bin to completion and returns its wall time and peak RSS (KiB).
func runTimed(bin string, args, env []string) (time.Duration, int64, string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	var maxrss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			maxrss = ru.Maxrss
		}
	}
	if err != nil {
		return d, maxrss, out.String(), fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, tail(out.String(), 600))
	}
	return d, maxrss, out.String(), nil
}
