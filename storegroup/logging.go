package storegroup

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// newRaftLogger routes raft's hclog output into slog: hclog writes one JSON
// object per line, which is re-emitted as a structured slog record.
func newRaftLogger(l *slog.Logger, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.Info,
		JSONFormat: true,
		Output:     &hclogWriter{l: l},
	})
}

type hclogWriter struct{ l *slog.Logger }

func (w *hclogWriter) Write(p []byte) (int, error) {
	var rec map[string]any
	if err := json.Unmarshal(p, &rec); err != nil {
		w.l.Info(string(p))
		return len(p), nil
	}
	level := slog.LevelInfo
	switch rec["@level"] {
	case "trace", "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	msg, _ := rec["@message"].(string)
	attrs := make([]slog.Attr, 0, len(rec))
	for k, v := range rec {
		switch k {
		case "@level", "@message", "@timestamp", "@caller":
			continue
		case "@module":
			k = "module"
		}
		attrs = append(attrs, slog.Any(k, v))
	}
	w.l.LogAttrs(context.Background(), level, msg, attrs...)
	return len(p), nil
}
