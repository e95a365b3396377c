// Package cli holds what the umstore commands share: finding the stores
// from a deployment file or UM-style --store flags, and logging set-up.
package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"umstore/placement"
)

// StoreGroups returns, per group (index 0 = group 1), the client addresses
// of its stores, from a deployment file or from UM-style store specs
// ("IP:port[:RegID[:GroupIDX]]", group 1 when the index is omitted).
// Exactly one of the two must be given.
func StoreGroups(deploymentPath string, stores []string) ([][]string, *placement.Deployment, error) {
	switch {
	case deploymentPath != "" && len(stores) > 0:
		return nil, nil, errors.New("give either --deployment or --store, not both")
	case deploymentPath != "":
		d, err := placement.Load(deploymentPath)
		if err != nil {
			return nil, nil, err
		}
		return DeploymentGroups(d), d, nil
	case len(stores) > 0:
		g, err := ParseStores(stores)
		return g, nil, err
	default:
		return nil, nil, errors.New("say where the stores are: --deployment FILE (written by `umstored plan` or `umstored dev`) or --store IP:port[:RegID[:GroupIDX]]")
	}
}

// DeploymentGroups lists the client addresses of every group in order.
func DeploymentGroups(d *placement.Deployment) [][]string {
	var out [][]string
	for i := 1; ; i++ {
		ms := d.Members(i)
		if len(ms) == 0 {
			return out
		}
		var addrs []string
		for _, m := range ms {
			addrs = append(addrs, m.ClientAddr())
		}
		out = append(out, addrs)
	}
}

// ParseStores parses UM ume_store specs: IP:port[:RegID[:GroupIDX]].
func ParseStores(specs []string) ([][]string, error) {
	byGroup := map[int][]string{}
	maxGroup := 0
	for _, spec := range specs {
		parts := strings.Split(spec, ":")
		if len(parts) < 2 || len(parts) > 4 {
			return nil, fmt.Errorf("--store %q: want IP:port[:RegID[:GroupIDX]]", spec)
		}
		if net.ParseIP(parts[0]) == nil {
			return nil, fmt.Errorf("--store %q: %q is not an IP address", spec, parts[0])
		}
		if p, err := strconv.Atoi(parts[1]); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("--store %q: port %q is not 1..65535", spec, parts[1])
		}
		group := 1
		if len(parts) == 4 {
			g, err := strconv.Atoi(parts[3])
			if err != nil || g < 1 || g > 64 {
				return nil, fmt.Errorf("--store %q: group index %q is not 1..64", spec, parts[3])
			}
			group = g
		}
		byGroup[group] = append(byGroup[group], net.JoinHostPort(parts[0], parts[1]))
		maxGroup = max(maxGroup, group)
	}
	out := make([][]string, maxGroup)
	for g := 1; g <= maxGroup; g++ {
		if len(byGroup[g]) == 0 {
			return nil, fmt.Errorf("--store: group %d has no stores (group indexes must be 1..N without holes)", g)
		}
		out[g-1] = byGroup[g]
	}
	return out, nil
}

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
