package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/config"
)

// readmeBlock is one fenced code block of a Markdown file.
type readmeBlock struct {
	Lang string
	Text string
	Line int    // the opening fence's line number
	Skip string // the reason given by a "<!-- readme-test: skip (…) -->" line just before it
}

// readmeBlocks parses the fenced code blocks of a Markdown file.
func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeBlock
	var cur *readmeBlock
	skip := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "<!-- readme-test: skip"):
			skip = strings.TrimSuffix(strings.TrimPrefix(line, "<!-- readme-test: skip"), "-->")
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{Lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), Line: n, Skip: strings.TrimSpace(skip)}
			skip = ""
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.Text += line + "\n"
		case strings.TrimSpace(line) != "":
			skip = "" // a skip note applies to the block right after it
		}
	}
	if cur != nil {
		t.Fatalf("%s: code block at line %d is not closed", path, cur.Line)
	}
	return out
}

// TestReadme runs README.md as a new user would on a fresh machine: every `sh`
// block that needs no network, no exports of your own and not the test suite
// itself, in order, in one fresh HOME, with the binary this test built on PATH
// (`go run ./cmd/openhuman-core` is that binary). Every `json` block parses, and
// every `toml` block is a config.toml that loads (the first one is the defaults).
// A skipped block must say why.
func TestReadme(t *testing.T) {
	bin := builtBinary(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(root, "README.md")
	blocks := readmeBlocks(t, readme)
	home := t.TempDir()
	env := []string{"HOME=" + home, "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"GOFLAGS=" + os.Getenv("GOFLAGS"), "LANG=C.UTF-8"}
	ran, tomls := 0, 0
	for _, b := range blocks {
		switch b.Lang {
		case "sh":
			if b.Skip != "" {
				if !strings.HasPrefix(b.Skip, "(") || len(b.Skip) < 10 {
					t.Errorf("README.md:%d: a skipped block must give its reason: %q", b.Line, b.Skip)
				}
				continue
			}
			ran++
			script := strings.ReplaceAll(b.Text, "go run ./cmd/openhuman-core", "openhuman-core")
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
			cmd.Dir, cmd.Env = root, env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("README.md:%d: %v\n%s\nstdout:\n%s\nstderr:\n%s", b.Line, err, b.Text, stdout.String(), stderr.String())
				continue
			}
			checkReadmeOutput(t, b, stdout.String())
		case "json":
			var v any
			if err := json.Unmarshal([]byte(b.Text), &v); err != nil {
				t.Errorf("README.md:%d: not valid JSON: %v\n%s", b.Line, err, b.Text)
			}
		case "toml":
			tomls++
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(b.Text), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, _, err := config.Load("", func(k string) (string, bool) {
				if k == "OPENHUMAN_HOME" {
					return dir, true
				}
				return "", false
			})
			if err != nil {
				t.Errorf("README.md:%d: the config does not load: %v", b.Line, err)
				continue
			}
			if tomls == 1 { // "The defaults, written out": nothing changes
				def := config.Defaults(dir)
				cfg.File = ""
				if len(cfg.Server.AllowedHosts) == 0 && len(def.Server.AllowedHosts) == 0 {
					cfg.Server.AllowedHosts = def.Server.AllowedHosts // [] and unset say the same
				}
				if !reflect.DeepEqual(cfg, def) {
					t.Errorf("README.md:%d: the written-out defaults differ from the defaults:\n got %+v\nwant %+v", b.Line, cfg, def)
				}
			}
		}
	}
	// The Chinese translation shows the same commands, snippets and configs.
	zh := readmeBlocks(t, filepath.Join(root, "README.zh-CN.md"))
	if len(zh) != len(blocks) {
		t.Errorf("README.zh-CN.md has %d code blocks, README.md %d: translate the change", len(zh), len(blocks))
	}
	for i := range min(len(zh), len(blocks)) {
		if zh[i].Lang != blocks[i].Lang || zh[i].Text != blocks[i].Text || zh[i].Skip != blocks[i].Skip {
			t.Errorf("README.zh-CN.md:%d differs from README.md:%d: keep the code blocks identical", zh[i].Line, blocks[i].Line)
		}
	}
	if ran < 4 || tomls < 2 {
		t.Errorf("ran %d sh blocks and %d toml blocks; the README lost its runnable examples?", ran, tomls)
	}
	// The client snippets shown first work with nothing else running: only the
	// block that says it is optional turns SearXNG on.
	on := 0
	for _, b := range blocks {
		if b.Lang == "json" && strings.Contains(b.Text, "SEARXNG_ENABLED") {
			on++
		}
	}
	if on != 1 {
		t.Errorf("%d client snippets turn SearXNG on; only the optional one should", on)
	}
}

// checkReadmeOutput asserts what the README says a block prints.
func checkReadmeOutput(t *testing.T, b readmeBlock, stdout string) {
	t.Helper()
	switch {
	case strings.Contains(b.Text, `"method":"tools/list"`):
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if len(lines) != 2 {
			t.Errorf("README.md:%d: the smoke test printed %d lines, the README says exactly two:\n%s", b.Line, len(lines), stdout)
			return
		}
		for _, l := range lines {
			var m struct {
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal([]byte(l), &m) != nil || len(m.Result) == 0 {
				t.Errorf("README.md:%d: not a result line: %s", b.Line, l)
			}
		}
		if !strings.Contains(lines[0], `"name":"openhuman-core"`) || !strings.Contains(lines[1], `"tree.list_sources"`) {
			t.Errorf("README.md:%d: smoke output lacks serverInfo or the tools:\n%s", b.Line, stdout)
		}
	case strings.Contains(b.Text, "openhuman-core status"):
		for _, want := range []string{"document 2", "last ingest", "would forget document", "garden.md", "all checks passed"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("README.md:%d: output lacks %q:\n%s", b.Line, want, stdout)
			}
		}
	case strings.Contains(b.Text, "tools audit --builtin all"):
		if !strings.Contains(stdout, "WOULD LOAD") {
			t.Errorf("README.md:%d: audit output lacks the verdict:\n%s", b.Line, stdout)
		}
	}
}
