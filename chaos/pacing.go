package main

import (
	"fmt"
	"time"

	"umstore/publisher"
)

// RPPSettings say which source of a schedule publishes with receiver-paced
// persistence, and what of the stores' settings the checker needs. The
// paced source is the last one (s2 with the default two sources), so that
// s1 keeps the source-paced path under the same faults: its publisher
// registers it as blocking RPP (publisher.Config.ReceiverPaced), every
// `umstored run` allows it (--allow-receiver-paced-persistence) with an
// explicit --receiver-activity-timeout, and its durable receiver child
// registers as a paced receiver (receiver.Config.Paced). Its in-process
// follower stays unnamed: it paces nothing, and may be told that messages
// the durable receiver consumed were released (see checkRPP).
type RPPSettings struct {
	Source string           `json:"source"`
	Mode   publisher.Pacing `json:"mode"`
	// ActivityTimeout is --receiver-activity-timeout: how long after the
	// stores last heard from a paced receiver its hold may lapse.
	ActivityTimeout time.Duration `json:"activity_timeout"`
}

// rppActivityTimeout is the --receiver-activity-timeout the harness
// passes: umstored's default, stated, so the checker knows it.
const rppActivityTimeout = 30 * time.Second

// pickRPP makes the last of sources receiver-paced (blocking), when on
// and there are at least two (a run with one source keeps it unpaced).
func pickRPP(sources []string, on bool) *RPPSettings {
	if !on || len(sources) < 2 {
		return nil
	}
	return &RPPSettings{Source: sources[len(sources)-1], Mode: publisher.PacingBlocking, ActivityTimeout: rppActivityTimeout}
}

// paced reports whether source is the paced source (false on nil).
func (s *RPPSettings) paced(source string) bool { return s != nil && s.Source == source }

// pacedSource is the paced source's name, "" on nil.
func (s *RPPSettings) pacedSource() string {
	if s == nil {
		return ""
	}
	return s.Source
}

func (s *RPPSettings) String() string {
	if s == nil {
		return "no paced source"
	}
	return fmt.Sprintf("source %s paced (%s), receiver activity timeout %v", s.Source, s.Mode, s.ActivityTimeout)
}

// args are the `umstored run` flags for s; none without a paced source.
func (s *RPPSettings) args() []string {
	if s == nil {
		return nil
	}
	return []string{"--allow-receiver-paced-persistence", "--receiver-activity-timeout", s.ActivityTimeout.String()}
}
