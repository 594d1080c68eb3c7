package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mcpSmoke = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`

// runMCPPipes runs `mcp` with stdin a pipe (not a terminal) holding input, and
// returns stdout and stderr.
func runMCPPipes(t *testing.T, input string, interactive func(*os.File) bool) (string, string) {
	t.Helper()
	t.Setenv("OPENHUMAN_HOME", t.TempDir())
	t.Setenv("OPENHUMAN_WORKSPACE", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() { io.WriteString(w, input); w.Close() }()
	var stdout, stderr bytes.Buffer
	if err := serveMCP(context.Background(), r, &stdout, &stderr, interactive(r)); err != nil {
		t.Fatalf("mcp: %v\nstderr:\n%s", err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// With stdin not a terminal (a client's pipe), stdout carries the protocol
// frames and nothing else, and the hint for people is not printed.
func TestMCPStdoutIsFramesOnly(t *testing.T) {
	stdout, stderr := runMCPPipes(t, mcpSmoke, isTerminal)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout has %d lines, want the 2 answers:\n%s", len(lines), stdout)
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["jsonrpc"] != "2.0" || m["id"] != float64(i+1) || m["result"] == nil {
			t.Errorf("stdout line %d is not the answer to request %d: %q", i+1, i+1, l)
		}
	}
	if strings.Contains(stdout+stderr, "waiting for an MCP client") {
		t.Errorf("the terminal hint was printed although stdin is a pipe:\nstdout: %s\nstderr: %s", stdout, stderr)
	}
}

// On a terminal the hint is one line on stderr; stdout still has only frames.
func TestMCPTerminalHint(t *testing.T) {
	stdout, stderr := runMCPPipes(t, mcpSmoke, func(*os.File) bool { return true })
	if strings.Count(stderr, terminalHint+"\n") != 1 {
		t.Errorf("stderr does not hold the hint once:\n%s", stderr)
	}
	if strings.Contains(stdout, "waiting") || strings.Count(stdout, "\n") != 2 {
		t.Errorf("stdout holds more than the 2 frames:\n%s", stdout)
	}
}

// With no HOME (so no user cache directory) and a read-only cache, `mcp` still
// starts and answers on stdout.
func TestMCPStartsWithoutUsableCache(t *testing.T) {
	ro := t.TempDir() // XDG_CACHE_HOME whose openhuman/wazero is read-only
	if err := os.MkdirAll(filepath.Join(ro, "openhuman", "wazero"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(ro, "openhuman", "wazero"), 0o500); err != nil {
		t.Fatal(err)
	}
	for name, cache := range map[string]string{"no-HOME": "", "read-only": ro} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("OPENHUMAN_HOME", t.TempDir())
			t.Setenv("OPENHUMAN_WORKSPACE", "")
			t.Setenv("HOME", "")
			t.Setenv("XDG_CACHE_HOME", cache)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			go func() { io.WriteString(w, mcpSmoke); w.Close() }()
			var stdout, stderr bytes.Buffer
			if err := serveMCP(context.Background(), r, &stdout, &stderr, false); err != nil {
				t.Fatalf("mcp did not run: %v\nstderr:\n%s", err, stderr.String())
			}
			if n := strings.Count(stdout.String(), `"result"`); n != 2 || !strings.Contains(stdout.String(), "memory.search") {
				t.Errorf("stdout does not carry the two answers:\n%s", stdout.String())
			}
			// The first-party modules run on the interpreter and never open the
			// cache, so there is nothing to warn about (a compiled module would:
			// runtime.TestUnusableCacheFallsBackToMemory).
			if n := strings.Count(stderr.String(), "compilation cache not used"); n != 0 {
				t.Errorf("stderr has %d cache warnings, want none:\n%s", n, stderr.String())
			}
		})
	}
}
