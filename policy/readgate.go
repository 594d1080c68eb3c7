package policy

import (
	"fmt"
	"slices"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Autonomy levels of config `[autonomy] level` (as in the reference).
const (
	LevelReadOnly   = "readonly"
	LevelSupervised = "supervised"
	LevelFull       = "full"
)

// readCapabilities are the capabilities that only read. Every capability this host
// implements reads; none writes.
var readCapabilities = []string{abi.CapMemoryRead, abi.CapWebSearXNG}

// ReadGate applies the autonomy level to one use of a capability. Reads are allowed
// at every level, read-only included; anything else is refused with the
// reference's message. An unknown level is an error naming the valid ones.
func ReadGate(level string, capability string) error {
	switch level {
	case "", LevelReadOnly, LevelSupervised, LevelFull:
	default:
		return fmt.Errorf("autonomy level %q is unknown; set [autonomy] level to %q, %q or %q", level, LevelReadOnly, LevelSupervised, LevelFull)
	}
	if slices.Contains(readCapabilities, capability) {
		return nil
	}
	if level == LevelReadOnly {
		return fmt.Errorf("Security policy: read-only mode, cannot perform '%s'", capability)
	}
	return fmt.Errorf("Security policy: '%s' is not a read operation and this host performs reads only", capability)
}
