package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Policy is how every store of a deployment behaves: retention, session
// expiry, the clients' keep-alive, intergroup repair, the data-directory
// lock, log compaction and where leadership goes. It lives in the
// deployment file (the `policy:` section) so that the whole deployment runs
// one policy, whichever host leads a group: a flag of `umstored run` may
// override a value for one daemon only, with a warning, and the stores of a
// group compare the policies they run (a mismatch is logged and shown in
// status).
//
// A file without the section, or without some of its keys, gets the
// defaults of [DefaultPolicy] for what it leaves out; they are UM's where UM
// has a name for the setting (SPEC §7). Keys are strict: a misspelt one is an
// error naming the line.
type Policy struct {
	// Retention bounds each source's repository; the oldest messages go
	// first, released by the group's leader through the log.
	Retention RetentionPolicy `yaml:"retention" json:"retention"`
	// SourceActivityTimeout frees a source whose publisher has been silent
	// (no message, no keep-alive) this long, so that another publisher may
	// take it over (UM source-activity-timeout, 30s). A publisher restarted
	// with its own session identity takes its source over at once.
	SourceActivityTimeout Duration `yaml:"source-activity-timeout" json:"source-activity-timeout"`
	// KeepAliveInterval is how often an idle publisher tells its groups it
	// is alive (UM keepalive-interval, 3s). It must be shorter than
	// SourceActivityTimeout, and is best well below it (a tenth, as UM's
	// defaults), so that a lost keep-alive never frees a live publisher's
	// source.
	KeepAliveInterval Duration `yaml:"keepalive-interval" json:"keepalive-interval"`
	// RepairRate caps the payload bytes per second a group's leader copies
	// from other groups (intergroup repair), so live publishing keeps
	// priority (32 MiB/s; 0 stands for the default, see
	// [Policy.WithDefaults]).
	RepairRate int `yaml:"repair-rate" json:"repair-rate"`
	// Lock is how each store locks its data directory.
	Lock LockPolicy `yaml:"lock" json:"lock"`
	// Snapshot tunes raft's log compaction.
	Snapshot SnapshotPolicy `yaml:"snapshot" json:"snapshot"`
	// Leadership says when a group's leadership moves to its preferred host
	// (see [Group.PreferredHost]).
	Leadership LeadershipPolicy `yaml:"leadership" json:"leadership"`
}

// RetentionPolicy bounds each source's repository (UM's
// repository-disk-file-size-limit is MaxBytes). 0 turns a limit off.
type RetentionPolicy struct {
	// MaxBytes: keep at most this many payload bytes per source (100 MiB).
	MaxBytes uint64 `yaml:"max-bytes" json:"max-bytes"`
	// MaxMessages: keep at most this many messages per source (no limit).
	MaxMessages uint64 `yaml:"max-messages" json:"max-messages"`
	// MaxAge: release messages older than this (no limit).
	MaxAge Duration `yaml:"max-age" json:"max-age"`
	// Interval is how often the leader checks the limits (5s).
	Interval Duration `yaml:"interval" json:"interval"`
}

// LockPolicy is the lock every store takes on its data directory (seeds 000
// and 003): flock, or a lease renewed every KeepAlive on shared storage
// where flock cannot be trusted.
type LockPolicy struct {
	// Mode is "flock" (default) or "lease".
	Mode string `yaml:"mode" json:"mode"`
	// KeepAlive is how often a lease holder renews its lease (1s; lease
	// mode only). The lease lasts three times this.
	KeepAlive Duration `yaml:"keepalive" json:"keepalive"`
	// AcquireInterval is how often a standby tries to take the lock; 0
	// means the default (200ms for flock, twice KeepAlive for a lease). In
	// lease mode it must be longer than KeepAlive.
	AcquireInterval Duration `yaml:"acquire-interval" json:"acquire-interval"`
}

// SnapshotPolicy tunes raft's log compaction: every Interval raft
// snapshots if more than Threshold entries were written, keeping
// TrailingLogs entries for members slightly behind.
type SnapshotPolicy struct {
	Threshold    uint64   `yaml:"threshold" json:"threshold"`         // 8192, at least 1
	Interval     Duration `yaml:"interval" json:"interval"`           // 2m, at least 5ms
	TrailingLogs uint64   `yaml:"trailing-logs" json:"trailing-logs"` // 4096
}

// LeadershipPolicy is the hysteresis of leader placement: a group's leader
// hands leadership to a member on the group's preferred host only once that
// member has been up and caught up for Settle, and moves a group's
// leadership at most once per MinInterval. Leadership never moves away from
// the preferred host this way, so it cannot go back and forth.
type LeadershipPolicy struct {
	// Settle: how long the preferred member must have been caught up (2s).
	// 0 turns leader placement off.
	Settle Duration `yaml:"settle" json:"settle"`
	// MinInterval: at most one move per group in this long (30s).
	MinInterval Duration `yaml:"min-interval" json:"min-interval"`
}

// IsZero reports whether the policy is unset or wholly the default: the
// deployment file then leaves the section out, so that a file says only
// what its operator chose, and a later version's defaults apply to the
// rest.
func (p Policy) IsZero() bool { return p == Policy{} || p == DefaultPolicy() }

// Lock modes of [LockPolicy.Mode].
const (
	LockFlock = "flock"
	LockLease = "lease"
)

// MinSnapshotInterval is the shortest snapshot interval raft accepts.
const MinSnapshotInterval = 5 * time.Millisecond

// DefaultPolicy returns the policy of a deployment file that says nothing:
// UM's defaults where UM names the setting.
func DefaultPolicy() Policy {
	return Policy{
		Retention: RetentionPolicy{
			MaxBytes: 100 << 20,
			Interval: Duration(5 * time.Second),
		},
		SourceActivityTimeout: Duration(30 * time.Second),
		KeepAliveInterval:     Duration(3 * time.Second),
		RepairRate:            32 << 20,
		Lock:                  LockPolicy{Mode: LockFlock, KeepAlive: Duration(time.Second)},
		Snapshot:              SnapshotPolicy{Threshold: 8192, Interval: Duration(2 * time.Minute), TrailingLogs: 4096},
		Leadership:            LeadershipPolicy{Settle: Duration(2 * time.Second), MinInterval: Duration(30 * time.Second)},
	}
}

// WithDefaults returns p with each key that holds no setting replaced by
// its default from [DefaultPolicy]: every key of a wholly unset policy (one
// built in code; a file's keys get their defaults as it is read), an empty
// lock.mode, a key that must be positive and is not (retention.interval,
// source-activity-timeout, keepalive-interval, lock.keepalive) and a
// repair-rate of 0 or less, which has always stood for the default rate.
// Every other key keeps its value, zero included (0 turns a retention limit
// off, keeps no trailing logs, turns leader placement off).
//
// It is the policy the stores run: a store's configuration is built from
// it (package storehost), and its [Policy.Digest] is what the members of a
// group compare, the same for the same deployment file from one version to
// the next.
func (p Policy) WithDefaults() Policy {
	def := DefaultPolicy()
	if p == (Policy{}) {
		return def
	}
	if p.Lock.Mode == "" {
		p.Lock.Mode = def.Lock.Mode
	}
	positive := func(v *Duration, d Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	positive(&p.Retention.Interval, def.Retention.Interval)
	positive(&p.SourceActivityTimeout, def.SourceActivityTimeout)
	positive(&p.KeepAliveInterval, def.KeepAliveInterval)
	positive(&p.Lock.KeepAlive, def.Lock.KeepAlive)
	if p.RepairRate <= 0 {
		p.RepairRate = def.RepairRate
	}
	return p
}

// Canonical is the policy as one line of key=value pairs in a fixed order:
// what stores exchange and compare, and what status shows of a mismatch.
func (p Policy) Canonical() string {
	kv := [][2]string{
		{"retention.max-bytes", fmt.Sprint(p.Retention.MaxBytes)},
		{"retention.max-messages", fmt.Sprint(p.Retention.MaxMessages)},
		{"retention.max-age", p.Retention.MaxAge.String()},
		{"retention.interval", p.Retention.Interval.String()},
		{"source-activity-timeout", p.SourceActivityTimeout.String()},
		{"keepalive-interval", p.KeepAliveInterval.String()},
		{"repair-rate", fmt.Sprint(p.RepairRate)},
		{"lock.mode", p.Lock.Mode},
		{"lock.keepalive", p.Lock.KeepAlive.String()},
		{"lock.acquire-interval", p.Lock.AcquireInterval.String()},
		{"snapshot.threshold", fmt.Sprint(p.Snapshot.Threshold)},
		{"snapshot.interval", p.Snapshot.Interval.String()},
		{"snapshot.trailing-logs", fmt.Sprint(p.Snapshot.TrailingLogs)},
		{"leadership.settle", p.Leadership.Settle.String()},
		{"leadership.min-interval", p.Leadership.MinInterval.String()},
	}
	parts := make([]string, len(kv))
	for i, e := range kv {
		parts[i] = e[0] + "=" + e[1]
	}
	return strings.Join(parts, " ")
}

// Digest is a short hash of [Policy.Canonical]: equal policies have equal
// digests.
func (p Policy) Digest() string {
	sum := sha256.Sum256([]byte(p.Canonical()))
	return hex.EncodeToString(sum[:6])
}

// PolicyDiff lists the keys on which two canonical policies differ, as
// "key: a vs b". Unparsable input gives no difference.
func PolicyDiff(a, b string) []string {
	parse := func(s string) (map[string]string, []string) {
		m := map[string]string{}
		var order []string
		for _, f := range strings.Fields(s) {
			k, v, ok := strings.Cut(f, "=")
			if ok {
				m[k] = v
				order = append(order, k)
			}
		}
		return m, order
	}
	am, order := parse(a)
	bm, border := parse(b)
	for _, k := range border {
		if _, ok := am[k]; !ok {
			order = append(order, k)
		}
	}
	var out []string
	for _, k := range order {
		if am[k] != bm[k] {
			out = append(out, fmt.Sprintf("%s: %s vs %s", k, orDash(am[k]), orDash(bm[k])))
		}
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// policy checks the policy section; an empty section (every field zero) was
// filled with the defaults by FillDefaults.
func (v *validator) policy() {
	p := v.d.Policy
	if p == (Policy{}) {
		p = DefaultPolicy() // unset in code: FillDefaults gives the defaults
	}
	const at = "policy."
	if p.SourceActivityTimeout <= 0 {
		v.add(at+"source-activity-timeout", "must be positive, e.g. 30s (UM's default): a silent publisher's source is freed after it")
	}
	switch {
	case p.KeepAliveInterval <= 0:
		v.add(at+"keepalive-interval", "must be positive, e.g. 3s (UM's default)")
	case p.SourceActivityTimeout > 0 && p.KeepAliveInterval >= p.SourceActivityTimeout:
		v.add(at+"keepalive-interval", "%v is not shorter than source-activity-timeout (%v): a live publisher's source would be freed between two keep-alives; make it well below (UM: 3s against 30s)",
			p.KeepAliveInterval, p.SourceActivityTimeout)
	}
	if p.RepairRate < 0 {
		v.add(at+"repair-rate", "must not be negative (bytes per second; 0: the default, 32 MiB/s)")
	}
	if p.Retention.MaxAge < 0 {
		v.add(at+"retention.max-age", "must not be negative (0: no age limit)")
	}
	if p.Retention.Interval <= 0 {
		v.add(at+"retention.interval", "must be positive, e.g. 5s: how often the leader checks the retention limits")
	}
	switch p.Lock.Mode {
	case LockFlock, LockLease:
	default:
		v.add(at+"lock.mode", "%q is not a lock mode; use %q (default) or %q (shared storage where flock cannot be trusted)", p.Lock.Mode, LockFlock, LockLease)
	}
	if p.Lock.KeepAlive <= 0 {
		v.add(at+"lock.keepalive", "must be positive, e.g. 1s")
	}
	if p.Lock.AcquireInterval < 0 {
		v.add(at+"lock.acquire-interval", "must not be negative (0: the default)")
	}
	if p.Lock.Mode == LockLease && p.Lock.AcquireInterval > 0 && p.Lock.AcquireInterval <= p.Lock.KeepAlive {
		v.add(at+"lock.acquire-interval", "%v must be longer than lock.keepalive (%v): the holder must renew its lease more often than standbys look at it", p.Lock.AcquireInterval, p.Lock.KeepAlive)
	}
	if p.Snapshot.Threshold < 1 {
		v.add(at+"snapshot.threshold", "must be at least 1 (8192 by default)")
	}
	if p.Snapshot.Interval < Duration(MinSnapshotInterval) {
		v.add(at+"snapshot.interval", "%v is too short: raft needs at least %v (the default is 2m)", p.Snapshot.Interval, MinSnapshotInterval)
	}
	if p.Leadership.Settle < 0 || p.Leadership.MinInterval < 0 {
		v.add(at+"leadership", "settle and min-interval must not be negative (settle 0 turns leader placement off)")
	}
}

// Duration is a time.Duration written as Go writes durations ("30s",
// "2m0s") in the deployment file and its JSON.
type Duration time.Duration

// String writes the duration as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads "30s", "1m30s" or "0".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	// A *yaml.TypeError, so that the file's errors are reported together
	// and with the file's name.
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a duration such as 30s or 2m", n.Line)}}
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration: write it as 500ms, 30s or 2m", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a string duration.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
