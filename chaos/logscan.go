package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// incarnationMarker starts the line the harness writes into a host's (or
// publisher's) log before each incarnation.
const incarnationMarker = "### chaos:"

// Messages of the store daemon's log that the scan looks for.
const (
	logBootstrap = "bootstrapping a brand-new group"
	logIdentity  = "group identity created"
	logJoining   = "joining the group empty"
	logCaughtUp  = "caught up with the group"
)

// The store's message when it finds its files damaged at start and moves
// them to a numbered backup (storegroup/open.go).
const logDamagedFiles = "damaged files: the store cannot use"

// The leader's messages about retention (storegroup/retention.go,
// pacing.go): a Trim that took effect (with its source and reason), and a
// paced source's publisher held back at the limit.
const (
	logReleased = "retention released the oldest messages"
	logHeldBack = "holding a publisher back: receiver-paced persistence"
)

// Raft's messages about snapshots (hashicorp/raft v1.7: snapshot.go,
// replication.go, raft.go), and the store's own when it restores a
// received snapshot at start (storegroup/open.go).
const (
	logSnapshotTaken     = "snapshot complete up to"
	logSnapshotSending   = "installing snapshot on"
	logSnapshotSendFail  = "failed to install snapshot"
	logSnapshotOpenFail  = "failed to open snapshot"
	logSnapshotInstalled = "Installed remote snapshot"
	logSnapshotRestoring = "repository is behind the latest snapshot; restoring it"
)

// The leader's message when it frees a publisher's source
// (storegroup/activity.go, proposeExpiry; logged once the expiry is
// committed), and the whys of an expiry for silence: the leader's own
// (expireSilent) and a new publisher's registration finding the holder
// silent (sessions.claim; the others are a newer incarnation's takeover
// and a goodbye); the lock's messages when a store locks its data directory
// (dirlock: flock.go, lease.go).
const (
	logFreedSource   = "freed a source for a new publisher"
	logForgot        = "forgot a receiver whose state lifetime ended"
	whySilent        = "silent for longer than the source activity timeout"
	whyTakenSilent   = "a new publisher takes over after the old one's silence"
	logFlockTaken    = "data directory locked"
	logLeaseTaken    = "data directory lease acquired"
	logLeaseTakeover = "took over the data directory lease"
)

// logSnapshotReceiveFails are the member's messages when a snapshot it is
// sent cannot be stored or restored.
var logSnapshotReceiveFails = []string{
	"failed to create snapshot to install",
	"failed to copy snapshot",
	"failed to receive whole snapshot",
	"failed to restore snapshot",
}

// hostLog is what the scan of one host daemon's log found.
type hostLog struct {
	Bootstraps []Bootstrap
	// Overlaps are the moments two empty stores of a group caught up
	// together.
	Overlaps  []CatchUpObs
	Snapshots SnapshotLog
	Retention RetentionLog
	// Expiries are the sources the leaders freed, Forgotten the receivers
	// they forgot, Locks the data directories the stores locked.
	Expiries  []SessionExpiry
	Forgotten []ReceiverForgotten
	Locks     []LockTaken
	// Backups are the stores that moved their files to a backup at start.
	Backups []StoreBackup
}

var logField = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S*)`)

// logFields parses one slog text line into its key=value fields.
func logFields(line string) map[string]string {
	out := map[string]string{}
	for _, m := range logField.FindAllStringSubmatch(line, -1) {
		v := m[2]
		if strings.HasPrefix(v, `"`) {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
		}
		if _, ok := out[m[1]]; !ok {
			out[m[1]] = v
		}
	}
	return out
}

// scanHostLog reads one host daemon's log (all incarnations) and returns
// every bootstrap and identity creation, every moment at which two empty
// stores of a group were catching up together (between a store's "joining
// the group empty" and its "caught up with the group" lines, within one
// incarnation of the daemon), what raft logged about snapshots, what
// the leaders logged about retention, the sources they freed and the
// receivers they forgot, and every lock a store took on its data
// directory.
func scanHostLog(host string, r io.Reader) (hostLog, error) {
	var out hostLog
	inc := 0
	catching := map[int][]string{} // group -> stores catching up
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, incarnationMarker) {
			f := logFields(line)
			if n, err := strconv.Atoi(f["incarnation"]); err == nil {
				inc = n
			} else {
				inc++
			}
			clear(catching) // the process died: nothing of it catches up any more
			continue
		}
		if !strings.Contains(line, "msg=") {
			continue
		}
		f := logFields(line)
		msg := f["msg"]
		group, _ := strconv.Atoi(f["group"])
		store := f["store"]
		switch {
		case strings.HasPrefix(msg, logBootstrap):
			out.Bootstraps = append(out.Bootstraps, Bootstrap{Host: host, Incarnation: inc, Store: store, Group: group, Kind: "bootstrap"})
		case strings.HasPrefix(msg, logIdentity):
			out.Bootstraps = append(out.Bootstraps, Bootstrap{Host: host, Incarnation: inc, Store: store, Group: group, Kind: "identity", GroupID: f["group_id"]})
		case strings.HasPrefix(msg, logJoining):
			if !slices.Contains(catching[group], store) {
				catching[group] = append(catching[group], store)
			}
			if len(catching[group]) > 1 {
				at, _ := time.Parse(time.RFC3339Nano, f["time"])
				out.Overlaps = append(out.Overlaps, CatchUpObs{Host: host, Group: group, Stores: slices.Clone(catching[group]), Via: fmt.Sprintf("log of incarnation %d", inc), At: at})
			}
		case strings.HasPrefix(msg, logCaughtUp):
			catching[group] = slices.DeleteFunc(catching[group], func(s string) bool { return s == store })
		case strings.HasPrefix(msg, logSnapshotTaken):
			out.Snapshots.Taken++
		case strings.HasPrefix(msg, logSnapshotSending):
			out.Snapshots.Sent++
		case strings.HasPrefix(msg, logSnapshotSendFail) && f["peer"] != "", strings.HasPrefix(msg, logSnapshotOpenFail):
			out.Snapshots.SendFailed++
		case strings.HasPrefix(msg, logSnapshotInstalled):
			at, _ := time.Parse(time.RFC3339Nano, f["time"])
			out.Snapshots.Installed++
			out.Snapshots.Installs = append(out.Snapshots.Installs, SnapshotInstall{Host: host, Incarnation: inc, Store: store, At: at})
		case strings.HasPrefix(msg, logSnapshotSendFail) || slices.ContainsFunc(logSnapshotReceiveFails, func(p string) bool { return strings.HasPrefix(msg, p) }):
			out.Snapshots.ReceiveFailed++
		case strings.HasPrefix(msg, logSnapshotRestoring):
			out.Snapshots.RestoredAtStart++
		case strings.HasPrefix(msg, logReleased):
			out.Retention.release(f["source"], f["reason"], 1)
		case strings.HasPrefix(msg, logHeldBack):
			out.Retention.heldBack(f["source"], 1)
		case strings.HasPrefix(msg, logFreedSource):
			at, _ := time.Parse(time.RFC3339Nano, f["time"])
			out.Expiries = append(out.Expiries, SessionExpiry{Host: host, Incarnation: inc, Store: store, Source: f["source"], Session: f["session"], Why: f["why"], At: at})
		case strings.HasPrefix(msg, logForgot):
			at, _ := time.Parse(time.RFC3339Nano, f["time"])
			out.Forgotten = append(out.Forgotten, ReceiverForgotten{Host: host, Incarnation: inc, Store: store, Source: f["source"], Receiver: f["receiver"], At: at})
		case strings.HasPrefix(msg, logDamagedFiles):
			at, _ := time.Parse(time.RFC3339Nano, f["time"])
			out.Backups = append(out.Backups, StoreBackup{Host: host, Incarnation: inc, Store: store, File: f["file"], Why: f["err"], At: at})
		case msg == logFlockTaken, msg == logLeaseTaken, msg == logLeaseTakeover:
			at, _ := time.Parse(time.RFC3339Nano, f["time"])
			mode := f["mode"]
			if msg != logFlockTaken {
				mode = "lease"
			}
			out.Locks = append(out.Locks, LockTaken{Host: host, Incarnation: inc, Store: store, Mode: mode, Holder: f["holder"], Previous: f["previous_holder"], At: at})
		}
	}
	if err := sc.Err(); err != nil {
		return hostLog{}, fmt.Errorf("read host %s log: %w", host, err)
	}
	return out, nil
}

// scanHostLogFile is scanHostLog on a file.
func scanHostLogFile(host, path string) (hostLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return hostLog{}, fmt.Errorf("open host %s log: %w", host, err)
	}
	defer f.Close()
	return scanHostLog(host, f)
}
