// Package cli holds what the umstore commands share: finding the stores
// from a deployment file or UM-style --store flags, and logging set-up.
package cli

import (
	"fmt"
	"io"
	"log/slog"
)

// Log formats accepted by Logger and the commands' --log-format flag.
const (
	LogFormatText = "text" // key=value pairs, one record per line (the default)
	LogFormatJSON = "json" // one JSON object per line, for log collectors
)

// Logger returns a logger on w at the named level ("debug", "info", "warn"
// or "error") in the named format: LogFormatText, or "" for it, or
// LogFormatJSON. The errors name the flag at fault and what it accepts.
func Logger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case LogFormatText, "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case LogFormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want %s or %s", format, LogFormatText, LogFormatJSON)
	}
}
