// Package toolname spells tool names the way every MCP client accepts them.
//
// The spec's names (memory.search, tree.read_chunk, …) are the canonical ids.
// Several deployed clients refuse any tool name outside ^[a-zA-Z0-9_-]{1,64}$
// (see internal/mcpserver/clients.go for which and why), so each tool also has a
// portable spelling: every character outside [a-zA-Z0-9_-] replaced by "_".
package toolname

import "fmt"

// MaxLen is the longest portable name: Claude Desktop and claude.ai check
// ^[a-zA-Z0-9_-]{1,64}$ and refuse the whole server when one name fails.
const MaxLen = 64

// Portable returns name with each byte outside [a-zA-Z0-9_-] replaced by "_"
// (a multi-byte character becomes one "_").
func Portable(name string) string {
	b := make([]byte, 0, len(name))
	for _, r := range name {
		if r < 0x80 && isPortable(byte(r)) {
			b = append(b, byte(r))
		} else {
			b = append(b, '_')
		}
	}
	return string(b)
}

// IsPortable reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func IsPortable(name string) bool {
	if len(name) == 0 || len(name) > MaxLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isPortable(name[i]) {
			return false
		}
	}
	return true
}

func isPortable(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Check reports why name cannot be served to every client: its portable
// spelling is longer than MaxLen. nil when it can.
func Check(name string) error {
	if p := Portable(name); len(p) > MaxLen {
		return fmt.Errorf("tool name %q is %d characters; clients such as Claude Desktop refuse names longer than %d, so shorten it in the manifest", name, len(p), MaxLen)
	}
	return nil
}
