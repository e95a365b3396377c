package storegroup

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"umstore/dirlock"
	"umstore/internal/clientperm"
	"umstore/internal/memberauth"
	"umstore/quorum"
	"umstore/storegroup/raftport"
)

// Member is one store of a group as the deployment describes it. It is
// the raft port's type, so the port checks its peers against the same
// records the store is configured with.
type Member = raftport.Member

// DialFunc opens a connection to address, as (*net.Dialer).DialContext does.
// It is the type of Config.Dial (raftport.DialFunc: the raft port dials
// through it too).
type DialFunc = raftport.DialFunc

// Security is a store's transport security. The zero value is plain TCP
// without a token or member secret: anyone who can reach the raft port can
// write the log (suitable on loopback only).
type Security struct {
	// MemberSecret is the deployment's member secret: every raft
	// connection proves, in both directions, that its ends hold it and are
	// members of the same group before raft reads a byte
	// (internal/memberauth). Nil turns the check off (deployments written
	// before the secret existed).
	MemberSecret []byte
	// ServerTLS serves the client and raft ports over TLS. For the raft
	// port, when ServerTLS has ClientCAs, a peer must present a
	// certificate signed by them that is valid as a server certificate for
	// the address of another member's host, and connect from that address:
	// a client's certificate never passes as a store's.
	ServerTLS *tls.Config
	// ClientTLS is used for the store's own connections: raft to its
	// peers, probes, repair fetches from other groups.
	ClientTLS *tls.Config
	// Token, if set, must be presented by every client in its Hello.
	Token string
	// OperatorToken, if set, must be carried by a Shutdown (umstored
	// stop): the client token then no longer stops the store. With neither
	// token set, only a loopback client may stop it.
	OperatorToken string
	// Clients, if set, are the deployment's client identities: a client
	// is admitted by its own token or TLS certificate name, to what its
	// identity allows; Token then admits the stores and operators, to
	// everything. nil: Token alone admits clients.
	Clients *clientperm.Set
}

// PeerGroup is another group of the deployment.
type PeerGroup struct {
	Index   int
	Members []Member
}

// Config describes one store. Build it with DefaultConfig and fill in the
// identity fields; Validate says what is missing.
//
// Config is the one statement of a store's settings. The deployment's
// policy (placement.Policy) sets the retention, activity-timeout, repair,
// lock, snapshot and leader-placement fields, each from one key, and
// Policy and PolicyDigest (storehost.ApplyPolicy); umstored's flags set
// the others straight. A field's zero means what its comment says,
// whichever layer set it.
type Config struct {
	// Name is this store's name; it must be one of Members.
	Name string
	// Group is the index of this store's group (1-based).
	Group int
	// Members lists every store of the group, this one included, in the
	// deployment's order. The first member bootstraps a brand-new group.
	Members []Member
	// OtherGroups lists the stores of every other group of the deployment.
	// An empty store asks them, before creating its group, whether they
	// remember the group's identity; a leader learns their identities.
	OtherGroups []PeerGroup
	// PreferredHost and PreferredMembers say where the group prefers to be
	// led from: the host holding its majority (placement's preferred host)
	// and the members that run there. A leader elsewhere hands leadership
	// to one of them once it has been up and caught up for LeaderSettle,
	// at most once per LeaderMinInterval (leadership.go). Empty: no
	// preference, leadership stays where elections put it.
	PreferredHost    string
	PreferredMembers []string
	// LeaderSettle and LeaderMinInterval are leader placement's
	// hysteresis; LeaderSettle 0 turns placement off.
	LeaderSettle      time.Duration
	LeaderMinInterval time.Duration
	// Policy and PolicyDigest are the deployment policy this store runs,
	// in placement's canonical form and its digest. The leader compares
	// them with its members' (a mismatch is logged and shown in status);
	// clients and status read them from Pong. Empty: not compared.
	Policy       string
	PolicyDigest string
	// Admission, if set, is asked before an empty store joins an existing
	// group, so a host catches up one empty store per group at a time.
	// Nil admits at once.
	Admission Admission
	// DataDir holds the raft log (wal/ or raft.db), repo.db and
	// snapshots/ of this store.
	DataDir string
	// LogStore is the raft log store of a new store: LogStoreWAL (the
	// default, also for "") or LogStoreBoltDB. A store whose data
	// directory already holds a log keeps the kind it has
	// (logstore_kind.go).
	LogStore string
	// LocalIP, if set, is the address this store's outgoing connections
	// leave from (its host's address), so partitions between hosts can be
	// made with firewall rules on source addresses.
	LocalIP net.IP
	// Logger receives the store's logs, raft's included. Nil means slog.Default.
	Logger *slog.Logger

	// HeartbeatTimeout, ElectionTimeout and LeaderLeaseTimeout tune raft's
	// failure detection. The defaults (500 ms, 500 ms, 250 ms) suit
	// loopback and LAN deployments: a group whose leader died has another
	// within about a second, which is what keeps a publisher's stall under
	// 2 s when a host goes (issue 17). Shorter values fail over faster and
	// flap more; links with longer delays need longer ones.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// MaxAppendEntries is how many log entries raft sends, stores and applies
	// in one batch (raft allows at most 1024).
	MaxAppendEntries int
	// SnapshotThreshold, SnapshotInterval and TrailingLogs control log
	// compaction: every SnapshotInterval raft snapshots if more than
	// SnapshotThreshold entries were written, keeping TrailingLogs entries
	// for followers that are slightly behind.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// LogBytes bounds the raft log by bytes too: a snapshot every LogBytes
	// written, and no more trailing entries than hold about LogBytes
	// (compactor.go). 0 leaves compaction to the entry counts above.
	LogBytes uint64
	// ApplyTimeout bounds how long a client request waits to enter the log.
	ApplyTimeout time.Duration
	// ProbeInterval is how often an empty store re-asks its group's members
	// before deciding whether to bootstrap.
	ProbeInterval time.Duration
	// RepairInterval is how often a leader compares its group with the
	// other groups and copies what it misses (0 disables repair).
	RepairInterval time.Duration
	// RepairBytesPerSecond caps the payload bytes a leader copies from other
	// groups per second, so repair never starves live publishing.
	RepairBytesPerSecond int
	// RepairBatchCount and RepairBatchBytes bound one repair fetch (and so
	// one raft entry).
	RepairBatchCount int
	RepairBatchBytes int
	// RetentionMaxBytes, RetentionMaxMessages and RetentionMaxAge bound each
	// source's repository (UM's repository-disk-file-size-limit: 100 MB by
	// default; no message or age limit by default). The oldest messages go
	// first, dropped by the leader through the log (0 disables a limit).
	RetentionMaxBytes    uint64
	RetentionMaxMessages uint64
	RetentionMaxAge      time.Duration
	// RetentionInterval is how often the leader checks the limits.
	RetentionInterval time.Duration
	// SourceActivityTimeout is how long a publisher may stay silent (no
	// message, no keep-alive) before its session is expired and another
	// publisher may take its source over (UM source-activity-timeout, 30s).
	SourceActivityTimeout time.Duration
	// ReceiverActivityTimeout is how long a named receiver may stay silent
	// (no acknowledgement, no keep-alive) before the leader expires it
	// through the log (UM receiver-activity-timeout, 30s): its name may then
	// be taken over by another instance, and it no longer holds a paced
	// source's messages back. Its position is kept (see
	// ReceiverStateLifetime).
	ReceiverActivityTimeout time.Duration
	// ReceiverStateLifetime is how long after a receiver went silent the
	// group forgets its state, position included (UM
	// receiver-state-lifetime); a receiver registering under the name later
	// starts as a new one. 0 (the default) keeps the state: unlike UM, whose
	// 0 deletes it at the activity timeout, because a
	// durable receiver that is down longer than 30 s must still find its
	// place (a position costs a few bytes and, once expired, holds nothing
	// back).
	ReceiverStateLifetime time.Duration
	// AllowReceiverPacedPersistence lets publishers ask for receiver-paced
	// persistence (UM repository-allow-receiver-paced-persistence, off by
	// default): a paced source's messages are kept until its active paced
	// receivers consumed them, within the retention limits. Without it such
	// a registration is refused.
	AllowReceiverPacedPersistence bool
	// Intragroup is the deployment's intragroup stability behaviour
	// (stability.intragroup): which members must hold a message before the
	// leader acknowledges it. A publisher may ask for a stricter one for its
	// source (RegisterSource), never a weaker one. Default quorum, the
	// group's raft commit (clientserver's intragroup.go).
	Intragroup quorum.Intragroup
	// MaxFrame bounds incoming client frames (bytes).
	MaxFrame int
	// ClientLimits bounds client connections: how many per store and per
	// remote address, how long one may stay idle, how long a frame may
	// take, how many sources and receivers they may register
	// (clientserver's limits.go). Zero fields take the defaults.
	ClientLimits ClientLimits
	// RaftHandshakeTimeout bounds how long a connection to the raft port
	// may take to prove membership (TLS and the member handshake); a peer
	// still silent then is cut. RaftIdleTimeout closes an accepted raft
	// connection on which nothing arrived for that long (the dialing store
	// replaces its pooled connections before, so raft never notices).
	// Zero means the default.
	RaftHandshakeTimeout time.Duration
	RaftIdleTimeout      time.Duration
	// Security, if set, encrypts and authenticates the client and raft
	// transports and requires a token from clients.
	Security Security
	// Lock configures the exclusive lock on DataDir that the store holds for
	// its whole life (mode flock or lease, standby). Name and Logger are
	// filled in from the store's.
	Lock dirlock.Options
	// NoSync disables fsync in the repository. Only for tests and
	// benchmarks: a store with NoSync can lose acknowledged messages.
	NoSync bool
	// RepositoryCommitInterval is how long a store may keep batches of
	// publishes applied but not yet committed in its repository
	// (repository.ApplyDeferred), to commit them together: the next
	// batch is then decided without waiting for the previous one's two
	// fsyncs. Nothing acknowledged can be lost by it (the raft log holds
	// the entries, and a restart replays them); readers of this store see
	// a message up to this much later. 0 commits every batch.
	RepositoryCommitInterval time.Duration
	// FollowerCommitInterval is RepositoryCommitInterval for a store
	// that does not lead its group. Nobody reads a follower's repository
	// as it goes (receivers, Fetch, Sources and RangeDigest are the
	// leader's; a follower commits everything before it starts to lead,
	// and before a snapshot), so it may commit far less often: on two
	// cores and one disk, the followers' commits were most of the
	// repository's fsyncs, and they slowed every store's log writes. The
	// cost is a longer replay after a crash (what is applied but not
	// committed is replayed from the raft log) and a status view of a
	// follower's own files up to this much behind. 0 commits every batch.
	FollowerCommitInterval time.Duration

	// Dial, if set, opens this store's outgoing connections to other
	// stores (raft, probes, intergroup repair) in place of the operating
	// system's dialer (LocalIP is then not applied; TLS still is). Tests only: internal/clustertest refuses and cuts links between
	// stores with it to make partitions without a firewall. Nil in
	// production, where it costs nothing.
	Dial DialFunc

	// emulateLevel, when not 0, makes the store behave as a binary of
	// that format level (levels.go): it announces that level, and its
	// FSM stops on an entry of a newer command type, as the older binary
	// would. Tests only (export_test.go's EmulateLevel); 0 in production.
	emulateLevel int
}

// DefaultConfig returns the tuning defaults; the identity fields are empty.
// For the fields the deployment's policy sets, they are
// placement.DefaultPolicy's (storehost's tests hold the two together).
func DefaultConfig() Config {
	return Config{
		HeartbeatTimeout:   500 * time.Millisecond,
		ElectionTimeout:    500 * time.Millisecond,
		LeaderLeaseTimeout: 250 * time.Millisecond,
		MaxAppendEntries:   128,
		// Measured on the dev topology at 1,000 msgs/s of 1 KiB (BENCH.md):
		// p50 4.7 ms committing every batch, 3.1 ms at 20 ms.
		RepositoryCommitInterval: 10 * time.Millisecond,
		FollowerCommitInterval:   100 * time.Millisecond,
		SnapshotThreshold:        8192,
		SnapshotInterval:         120 * time.Second,
		TrailingLogs:             4096,
		LogBytes:                 256 << 20,
		ApplyTimeout:             10 * time.Second,
		ProbeInterval:            500 * time.Millisecond,
		MaxFrame:                 16 << 20,
		ClientLimits:             DefaultClientLimits(),

		RaftHandshakeTimeout: 5 * time.Second,
		RaftIdleTimeout:      2 * time.Minute,

		RepairInterval:       2 * time.Second,
		RepairBytesPerSecond: 32 << 20,
		RepairBatchCount:     1000,
		RepairBatchBytes:     512 << 10,

		RetentionMaxBytes: 100 << 20,
		RetentionInterval: 5 * time.Second,

		SourceActivityTimeout:   30 * time.Second,
		ReceiverActivityTimeout: 30 * time.Second,

		LeaderSettle:      2 * time.Second,
		LeaderMinInterval: 30 * time.Second,
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid store configuration")

// Validate checks the configuration without touching the disk or network.
func (c *Config) Validate() error {
	if c.Name == "" {
		return fmt.Errorf("%w: name is empty", ErrConfig)
	}
	if c.Group < 1 {
		return fmt.Errorf("%w: store %s: group must be 1 or more, got %d", ErrConfig, c.Name, c.Group)
	}
	if c.DataDir == "" {
		return fmt.Errorf("%w: store %s: data directory is empty", ErrConfig, c.Name)
	}
	if len(c.Members) < 3 || len(c.Members)%2 == 0 {
		return fmt.Errorf("%w: store %s: a group needs an odd number of at least 3 members, got %d", ErrConfig, c.Name, len(c.Members))
	}
	seen := map[string]bool{}
	found := false
	for _, m := range c.Members {
		if m.Name == "" || m.RaftAddr == "" || m.ClientAddr == "" {
			return fmt.Errorf("%w: store %s: member %+v lacks a name or an address", ErrConfig, c.Name, m)
		}
		if seen[m.Name] {
			return fmt.Errorf("%w: store %s: member %s listed twice", ErrConfig, c.Name, m.Name)
		}
		seen[m.Name] = true
		if m.Name == c.Name {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("%w: store %s is not among its group's members", ErrConfig, c.Name)
	}
	if c.MaxAppendEntries < 1 || c.MaxAppendEntries > 1024 {
		return fmt.Errorf("%w: store %s: MaxAppendEntries must be 1..1024, got %d", ErrConfig, c.Name, c.MaxAppendEntries)
	}
	if c.RepositoryCommitInterval < 0 || c.RepositoryCommitInterval > time.Second {
		return fmt.Errorf("%w: store %s: RepositoryCommitInterval must be 0..1s (0 commits every batch), got %v", ErrConfig, c.Name, c.RepositoryCommitInterval)
	}
	if c.FollowerCommitInterval < 0 || c.FollowerCommitInterval > time.Second {
		return fmt.Errorf("%w: store %s: FollowerCommitInterval must be 0..1s (0 commits every batch), got %v", ErrConfig, c.Name, c.FollowerCommitInterval)
	}
	if c.HeartbeatTimeout <= 0 || c.ElectionTimeout <= 0 || c.LeaderLeaseTimeout <= 0 || c.ApplyTimeout <= 0 || c.ProbeInterval <= 0 || c.SnapshotInterval <= 0 {
		return fmt.Errorf("%w: store %s: timeouts must be positive", ErrConfig, c.Name)
	}
	if err := CheckLogStore(c.LogStore); err != nil {
		return fmt.Errorf("%w: store %s: %v", ErrConfig, c.Name, err)
	}
	if err := c.Lock.Validate(); err != nil {
		return fmt.Errorf("%w: store %s: data-directory lock: %v", ErrConfig, c.Name, err)
	}
	if c.RaftHandshakeTimeout < 0 || c.RaftIdleTimeout < 0 {
		return fmt.Errorf("%w: store %s: RaftHandshakeTimeout and RaftIdleTimeout must not be negative (0: the default)", ErrConfig, c.Name)
	}
	if n := len(c.Security.MemberSecret); n > 0 && n < memberauth.MinSecret {
		return fmt.Errorf("%w: store %s: the member secret is %d bytes, at least %d are needed (umstored plan writes a good one)", ErrConfig, c.Name, n, memberauth.MinSecret)
	}
	if c.LeaderSettle < 0 || c.LeaderMinInterval < 0 {
		return fmt.Errorf("%w: store %s: LeaderSettle and LeaderMinInterval must not be negative", ErrConfig, c.Name)
	}
	for _, p := range c.PreferredMembers {
		if _, ok := c.member(p); !ok {
			return fmt.Errorf("%w: store %s: preferred member %s is not a member of the group", ErrConfig, c.Name, p)
		}
	}
	if c.SourceActivityTimeout <= 0 {
		return fmt.Errorf("%w: store %s: SourceActivityTimeout must be positive", ErrConfig, c.Name)
	}
	if c.ReceiverActivityTimeout <= 0 || c.ReceiverStateLifetime < 0 {
		return fmt.Errorf("%w: store %s: ReceiverActivityTimeout must be positive and ReceiverStateLifetime not negative (0 keeps receivers' state)", ErrConfig, c.Name)
	}
	if c.RetentionInterval < 0 || c.RetentionMaxAge < 0 {
		return fmt.Errorf("%w: store %s: retention settings must not be negative", ErrConfig, c.Name)
	}
	if err := c.ClientLimits.Validate(); err != nil {
		return fmt.Errorf("%w: store %s: %v", ErrConfig, c.Name, err)
	}
	if c.RepairInterval < 0 || c.RepairBytesPerSecond < 0 || c.RepairBatchCount < 1 || c.RepairBatchBytes < 1 {
		return fmt.Errorf("%w: store %s: repair settings must be positive (RepairInterval 0 disables repair)", ErrConfig, c.Name)
	}
	return nil
}

// self returns this store's member entry.
func (c *Config) self() Member {
	for _, m := range c.Members {
		if m.Name == c.Name {
			return m
		}
	}
	return Member{}
}

// member returns the member with the given name.
func (c *Config) member(name string) (Member, bool) {
	for _, m := range c.Members {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}
