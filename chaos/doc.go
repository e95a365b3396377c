// Command chaos is umstore's fault-injection suite: it runs the real
// binaries as two "hosts" on loopback, injects faults from a random but
// reproducible schedule, and checks the safety rules of SPEC §4 on what it
// recorded.
//
// Each schedule plans a fresh deployment for host A (127.0.0.2) and host B
// (127.0.0.3) with `umstored plan` (two groups of three stores, laid out
// 2+1/1+2), runs one `umstored run` process per host, starts one publisher
// child process per source (this program re-executed, publishing through
// the publisher SDK, with a state file kept across its incarnations unless
// --publisher-state=false), one following receiver per source (the
// receiver SDK, in the harness's process, never restarted: the reference
// reader, which must see every message exactly once) and one durable
// receiver child per source (this program re-executed again, a named
// receiver following from receiver.Resume, killed and restarted by
// kill-receiver; the last source's is a paced receiver, see below), then
// injects faults one at a time:
//
//   - kill-host: kill -9 a host's daemon, restart it with its state;
//   - wipe-host: kill -9 it, move its data directory aside, restart it
//     empty (its stores must rejoin one per group at a time);
//   - wipe-crash: as wipe-host, then kill -9 again while the empty stores
//     catch up, and restart with what they had;
//   - pause-host: SIGSTOP then SIGCONT the daemon;
//   - partition: drop every packet between 127.0.0.2 and 127.0.0.3 with
//     iptables rules (tagged with a comment; exactly those are deleted on
//     heal, on exit and on Ctrl-C), then heal;
//   - slow-disk: throttle a host's disk to a few writes per second, then
//     lift the limit (each host's data lives on its own ext4 image on a
//     loop device; the daemon is moved into a blkio cgroup with a write
//     IOPS limit on that device);
//   - kill-publisher: kill -9 a publisher child and start its next
//     incarnation (alone, or in the middle of a host fault); the stores
//     free the dead publisher's source after source-activity-timeout (30 s
//     by default), so the new incarnation typically registers then;
//   - corrupt-store: stop a host (kill -9 or gracefully), flip bits in
//     and cut the tail of files of one or two of its stores (repo.db,
//     raft.db, snapshot files; offsets inside real data: a bbolt file's
//     last pages below its high-water mark, payload bytes found in the
//     clear), start it again;
//   - stranger: a process that is not a member (this program run again,
//     as the publishers are) sends the raft and client ports of one host's
//     stores forged RPCs posing as a member (AppendEntries carrying
//     repository commands, RequestVote, TimeoutNow, InstallSnapshot, with
//     hashicorp/raft's own TCP transport), malformed raft frames, Publish
//     without Register, oversized, truncated and malformed client frames,
//     Registers at the last epoch and an anonymous Consumed of a receiver
//     name it registered;
//   - lost-writes: a power cut of one host: its daemon is frozen, its
//     disk's ext4 filesystem shut down without flushing the journal or
//     dirty pages (EXT4_IOC_SHUTDOWN, NOLOGFLUSH), the daemon killed, the
//     filesystem mounted again; its stores restart on what was synced;
//   - power-cut-all: a power cut of the whole site: both daemons frozen,
//     then both filesystems shut down as lost-writes does, both daemons
//     killed, both disks mounted again, and both hosts started on what
//     their disks kept (no store keeps anything it had not synced);
//   - upgrade-host (only with --previous-bin, a build of the previous
//     release): a schedule that draws it plans and starts its deployment
//     on the previous release; the fault stops a host gracefully and
//     starts it on the other binary (the new one, or back to the previous
//     until both hosts have run the new one at once);
//   - disk-full: a host's disk filled to the last block (fallocate, as
//     root, beside its data directory) while the publishers publish, kept
//     full for the hold, then freed; the stores that could not write stop
//     themselves (SPEC §4 rule 6) and the daemon, which must stay up, is
//     restarted as an operator would once there is room (only if a store
//     stopped), and its stores replay what they refused and catch up;
//   - overlap: two faults at once: the link cut while a host is killed
//     and restarted (partition+restart), or the other host frozen while a
//     wiped host's stores catch up (pause+catch-up); the groups may lose
//     their quorum while a pair lasts, so the liveness rule asks only that
//     the deployment come back within --restore-timeout once both are
//     healed;
//   - kill-receiver: kill -9 a source's durable receiver child and start
//     its next incarnation under the same name (alone, or in the middle of
//     a host fault), with the killed one's session (let in at once) or,
//     one time in three, a new one (let in once the stores expired the
//     killed session after receiver-activity-timeout, 30 s);
//   - replace-host: the host is replaced by a server at another address,
//     as docs/operations.md tells an operator: kill -9 its daemon, wipe its
//     data directory, write a deployment file placing it at the next free
//     loopback address of 127.0.0.5 and up (`umstored plan --deployment
//     LATEST --host NAME=ADDRESS`, beside the planned file, so it names the
//     same member secret file) and start it there, empty, from that file;
//     the other host keeps running, and restarting, with the file it had.
//     A host replaced again moves back to an address it left when no host
//     is there (.5, .6, .5, ...);
//   - clock-jump: step a host daemon's wall clock 5 minutes to 3 hours
//     forward or back (every daemon runs with --debug-clock; POST
//     /debug/clock), hold it, and step it back to 0, in half of them past
//     0 the other way first. A step reaches the times the stores write
//     into their logs and onto disk, not the durations they measure in
//     memory (activity timeouts, age retention, a lease holder's
//     renewals), which it must leave as they were.
//
// Every daemon runs with --retention-max-age and --receiver-state-lifetime
// of an hour or more (lifetimeLimits), which no schedule reaches, so that
// a clock stepped forward could reach age retention and receivers' state
// lifetimes if the stores judged them on it. The stores lock their data
// directories with flock by default; --lock lease runs every daemon with
// leases instead (and draws no pause-host or slow-disk: a holder that
// cannot renew for longer than its lease stops its stores by design).
//
// Everything the harness does by address follows a replaced host
// (addresses.go): its status is read at its new admin address, partitions
// cut the link between the hosts' current addresses, the stranger is
// given the host's current file, the operator's `umstored status` runs
// with the oldest file that still places a host where it is (the planned
// one until both hosts moved); its disk and its log stay its own. The
// publishers, durable receivers and followers keep the file they were
// started with, restarts included, and must reach the moved stores
// through the other stores' redirects; the product promises that only
// while one of the stores a client lists answers (docs/operations.md,
// "Replacing a host", step 6), so before a replacement that would leave a
// client's file placing no host where it is, that client is handed the
// new file: a publisher flushes and exits and its next incarnation starts
// with it, a durable receiver closes and starts again with its session, a
// follower resumes one past what it was handed. The final read, a new
// client, is given the newest file.
//
// Each kind is one file (kind_*.go) registering a kindSpec: what it hits,
// what it needs of the machine, how a plan draws its parameters, how it is
// injected and healed. A new kind is a new file.
//
// Every `umstored run` gets small snapshot settings drawn for the schedule
// from its seed (--snapshot-threshold 64-256 entries, --snapshot-interval
// 1-2s, --trailing-logs 16-64): the stores snapshot every second or two and
// keep only a few dozen entries, so a wiped member, and one that fell far
// behind, catches up by snapshot install (its leader streams a live copy
// of the repository) rather than from the log. Before the first fault the
// harness waits (at most 30s) until every store has taken a snapshot, so
// that even a wipe drawn first ends in installs. With umstored's defaults
// (--default-snapshots) a schedule never compacts its log and never runs
// that path. The settings and how many snapshots were taken, sent and
// installed (counted from raft's lines in the daemons' logs) are reported
// for each schedule; snapshot_installs in the totals says whether the
// install path ran at all.
//
// The last source of a schedule (s2 with the default two sources; none
// with --sources 1, or with --paced-source=false) publishes with blocking
// receiver-paced persistence: its publisher children register it as such
// (publisher.Config.ReceiverPaced), every `umstored run` allows it
// (--allow-receiver-paced-persistence) with an explicit
// --receiver-activity-timeout 30s, and its durable receiver child
// registers as a paced receiver (receiver.Config.Paced), once its
// publisher registered (a group records a receiver only for a source it
// holds). Its messages are then released as that receiver consumes them,
// and, in the even-numbered schedules, at the retention limit its
// publisher is held back rather than its unconsumed messages released: a
// kill of that receiver stalls it (until the next incarnation registers;
// with a new session, some 30 s). Its in-process follower stays unnamed,
// pacing nothing. The other sources keep source-paced retention.
//
// Only one host is ever down, paused, wiped or cut off at a time, but for
// overlap (two such faults at once) and power-cut-all, which takes both
// down together and starts both again
// (the layout survives the loss of one host, not of both: publishing
// stalls for the whole cut, and the liveness rule asks only that the
// deployment come back once both are started again). After each host
// fault the harness waits until every store is up, every group has a
// leader and `umstored status` says publishing is possible. All stores of a host
// run in one process, so there is no single store process to kill.
//
// The history records every message a publisher reported stable (source,
// sequence number, payload hash), every registration's resume point, every
// message the followers were handed and every range they were told no group
// holds, every durable receiver incarnation's registration (where it
// resumed, what each group and store answered), what it was handed and
// when (its handler writes each message down before it returns it, so
// whatever it consumed is known after kill -9), how it ended, and the
// receivers' positions the stores recorded (status samples, changes only),
// every source's release point on every store with the highest sequence
// number it held (status samples, changes only), what the leaders logged
// about retention (releases by reason, publishers held back),
// every host daemon incarnation with its address and deployment file,
// every store's view of where its group's members listen (its latest
// status sample), every store's group identity as /v1/status reports it, stores
// catching up together (from /v1/status samples and the daemons' logs), and
// every bootstrap the daemons logged. After the final heal and restoration
// the publishers flush and exit, the followers catch up, every source is
// read back from 1 to its highest sequence number, and the checker (pure,
// see Check) verifies:
//
//   - rule 1: every acknowledged message is readable, with the
//     acknowledged payload (above what retention's limit may have
//     released, and for the paced source above what a store released);
//   - rule 2: no sequence number carried two payloads, and no publisher
//     incarnation resumed at or below a sequence number an earlier one had
//     been told was stable;
//   - rule 3: no store's group identity ever changed, the stores of a group
//     agree on it, and each group was bootstrapped once;
//   - rule 4: never two empty stores of one group catching up together on
//     one host (a replaced host's stores, at its new address, too);
//   - moved: once the deployment was restored after the last replace-host,
//     every store reaches every other member of its group where it
//     listens (its status lists a moved member at its new address,
//     recorded in the group's log; a member it lists not is where its
//     host's file says), and no member refuses a store's address;
//   - the followers were handed every acknowledged message exactly once, in
//     order (the paced source's may be told that what a store released
//     after its paced receiver consumed it is held by no group);
//   - durable: each durable receiver was handed every acknowledged message
//     at least once and none reported as held by no group; each
//     incarnation in order, each message once, no gap it was not told
//     about; each restart began where its registration said, at or below
//     one past the highest message earlier incarnations were handed (no
//     gap after a restart); no store recorded a position past what the
//     receiver had been handed; a clean Close left its last position
//     recorded in every group;
//   - rpp: no store released a message of the paced source before its
//     paced receiver consumed it: wherever a group's release point first
//     rose to T (a status sample of one of its stores), the receiver had
//     been handed every message up to T by then, unless its hold may
//     have lapsed (no incarnation registered for the activity timeout,
//     less a keep-alive and a call; before its first registration) and
//     the limit alone releases T (T ≤ the store's newest − the limit);
//     see checkRPP;
//   - redelivery: a restart delivers again only what was consumed within
//     the documented window before the kill (one AckInterval plus one
//     acknowledgement call, 2.1 s; 5 s more while a host or link fault is
//     in force); each restart's redelivery is reported;
//   - integrity: no receiver (follower or final read) was given a payload
//     other than the one published for that sequence number: every payload
//     verifies itself (source, sequence number, incarnation and a checksum
//     of them and of its length), so a damaged payload is caught whether
//     or not it was acknowledged;
//   - stranger: nothing the stranger sent took effect (its payloads and
//     sources are marked: none reached a receiver or a store's status; no
//     store answered a forgery as accepted; no store released messages
//     while retention could release none) and no daemon exited and no
//     store failed while it sent;
//   - session: no leader freed the source of a publisher incarnation
//     that was still running for silence (each expiry in the daemons'
//     logs names the session, each incarnation reported its own; see
//     checkSessions for why this holds in every schedule);
//   - lifetime: no leader released messages for age or forgot a
//     receiver's state, neither of which a schedule lives long enough for;
//   - unpublished: no range a publisher declared never published (the
//     numbers it skipped past its state file's bound, read from its log)
//     holds an acknowledged message; the followers and the durable
//     receivers pass over such a range without being told, as the
//     receiver SDK does by design, and the receiver and durable rules
//     accept that;
//   - damage: no store found its files damaged at start (and moved them
//     to a backup, to rejoin empty) but after a corrupt-store fault on its
//     host: a crash or a power cut, of one host or of both, may lose what
//     a store did not sync, never make its files unusable (checkBackups);
//   - lock: no store's data directory was locked while the daemon that
//     had locked it before was still running;
//   - liveness: the deployment came back within --restore-timeout after
//     every fault, no daemon exited by itself, publishers registered and
//     flushed.
//
// Per kind of fault, the report and --json give the count, the longest
// publish stall attributed to it and its restore times (see KindStats for
// the exact definitions).
//
// A schedule with a violation keeps its directory (host, publisher and
// durable receiver logs, data directories, wiped directories,
// history.json, verdict.txt) and prints the command that replays it. The
// daemons run with --pprof: when the deployment does not come back after a
// fault, both daemons' goroutine stacks are kept there too.
//
// The short variant runs inside the normal test command (go test ./...):
// TestChaosShort runs a few schedules with a fixed seed in a few minutes,
// drawing the kinds in shortKinds (every kind a CI machine can inject;
// shortKindsPending would say what a kind left out waits for), and fails on any
// violation or lost message (it is skipped under -short and under the
// race detector). The long variant is run by hand:
//
//	go run ./chaos --schedules 50 --seed 1 --json
//
// The last line with --json is one JSON object with the totals: schedules,
// faults, acknowledged, lost, violations, snapshot_installs and more. Replay one schedule of a
// seed with --seed S --start N --schedules 1 --keep (the faults and their
// timing are replayed; the processes' own timing is not, so a race may take
// a few replays); draw only some faults with --kinds, e.g.
// --kinds pause-host,kill-publisher.
//
// Partitions need iptables and root; slow disks and lost writes need
// root, loop devices, mkfs.ext4 and the cgroup v1 blkio controller. Without
// them run with --partitions=false or --slow-disks=false. Replace-host
// needs nothing more: Linux answers on all of 127.0.0.0/8. The iptables rules, mounts,
// loop devices and cgroups the harness creates carry its process id; it
// removes them on exit and on Ctrl-C, and a later run removes those left by
// a harness that was killed.
package main
