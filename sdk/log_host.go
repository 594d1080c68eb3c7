//go:build !wasip1

package sdk

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Log writes msg at level (abi.LogDebug … abi.LogError). Inside a module it goes to
// the host's `log` function; in host builds (tests of handler logic) to log/slog.
func Log(level int32, msg string) {
	if msg == "" {
		return
	}
	lv := slog.LevelInfo
	switch level {
	case abi.LogDebug:
		lv = slog.LevelDebug
	case abi.LogWarn:
		lv = slog.LevelWarn
	case abi.LogError:
		lv = slog.LevelError
	}
	slog.Log(context.Background(), lv, msg, "source", "sdk")
}

// Logf formats and logs a message at level.
func Logf(level int32, format string, args ...any) {
	Log(level, fmt.Sprintf(format, args...))
}
