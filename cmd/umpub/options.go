package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"
	"umstore/internal/cli"
	"umstore/publisher"
	"umstore/quorum"
	"umstore/wire"

	"github.com/spf13/pflag"
)

// options are umpub's flags, bound by bindFlags and checked by check,
// and what resolve works out from them and the deployment.
type options struct {
	deployment, source, intergroup, logLevel string
	intragroup, flightBehavior, sessionID    string
	stateFile                                string
	paced                                    string
	tls                                      *tls.Config
	token                                    string
	logFormat                                string
	security                                 *cli.SecurityFlags
	stores                                   *cli.StoreFlags
	count, size, flight, sources             int
	connections                              string
	flightBytes                              int64
	rate                                     float64
	stdin, json                              bool
	showVersion                              bool
	payload                                  string
	timeout, lifetime                        time.Duration
	pprofAddr                                string

	// Worked out from the flags by run.
	intra    quorum.Intragroup
	behavior publisher.FlightBehavior
	regID    uint32
	regIDs   [][]uint32 // a RegID per store, per group (cli.StoreList.RegIDs)
	session  uint64
}

// deadline is how long the run may take: --timeout, plus at a fixed
// --rate the time its schedule itself takes (--rate 200 --count 12000 is a
// minute of sending, which --timeout's default alone would cut short).
func (o options) deadline() time.Duration {
	if o.rate <= 0 || o.stdin {
		return o.timeout
	}
	return o.timeout + time.Duration(float64(o.count)*float64(o.sources)/o.rate*float64(time.Second))
}

// maxSources bounds --sources: a store takes 100,000 sources on one
// connection (its MaxSourcesPerConn default).
const maxSources = 100_000

// bindFlags defines umpub's flags, bound into o, on a new flag set that
// reports to stderr.
func bindFlags(o *options, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("umpub", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.deployment, "deployment", "", "deployment `FILE` (from umstored plan or umstored dev)")
	o.stores = cli.AddStoreFlags(fs)
	fs.StringVar(&o.source, "source", "", "source name (required)")
	fs.IntVar(&o.count, "count", 1, "messages to generate (ignored with --stdin); per source with --sources")
	fs.StringVar(&o.pprofAddr, "pprof-addr", "", "serve Go's profiles (net/http/pprof) on `ADDR` while running, for measuring umpub itself in a benchmark (loopback only: it has no authentication)")
	fs.IntVar(&o.sources, "sources", 1, fmt.Sprintf("publish on this many sources at once (1..%d), NAME-1 .. NAME-K, each with its own publisher; every source registers before any sends, and the registrations' span is reported apart (bench mode; not with --stdin)", maxSources))
	fs.StringVar(&o.connections, "connections", "shared", "shared: every source's publisher reaches a store over one connection, as the sources of one UM context share its transport; per-source: a connection per source per group (the cost the stores pay for separate processes)")
	fs.IntVar(&o.size, "size", 64, "bytes per generated message")
	fs.StringVar(&o.payload, "payload", "text", "what generated messages hold after their \"SOURCE #SEQ \" head: text (dots, which compress) or random (random bytes, which do not: for benchmarks)")
	fs.Float64Var(&o.rate, "rate", 0, "messages per second (0: as fast as stability allows)")
	fs.BoolVar(&o.stdin, "stdin", false, "publish each line of standard input as one message")
	fs.StringVar(&o.intergroup, "intergroup", "", "intergroup stability: any, majority, all-active or all, or UM's any-group, all-groups (default: the deployment's, else any)")
	fs.StringVar(&o.intragroup, "intragroup", "", "intragroup stability: quorum (a majority of a group's stores hold a message: its raft commit), all-active (every running store) or all (every store; a group with one down confirms nothing), or UM's all-stores (UM ume_retention_intragroup_stability_behavior; default: the deployment's, which is also the least the stores apply)")
	fs.IntVar(&o.flight, "flight-size", 1000, "unstable messages allowed in flight (UM ume_flight_size)")
	fs.Int64Var(&o.flightBytes, "flight-size-bytes", 0, "payload bytes allowed in flight, 0 for no limit (UM ume_flight_size_bytes)")
	fs.StringVar(&o.flightBehavior, "flight-size-behavior", "block", "when the flight is full: block, or notify: send on, and log over/under (at --log-level info) (UM ume_flight_size_behavior)")
	fs.DurationVar(&o.lifetime, "stability-lifetime", 20*time.Minute, "log a warning for messages still unstable after this long, 0 for never (UM ume_message_stability_lifetime)")
	fs.StringVar(&o.sessionID, "session-id", "", "register as UM session `ID` (ume_session_id: decimal, 0x hex or 0 octal; at most 0xFFFFFFFFFFFFFFFE), so a restarted umpub is the same registration")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "give up if not every message is stable by then (covers registration, sending and the wait for stability; at a fixed --rate the time the rate itself takes, --count × --sources ÷ --rate, is added)")
	fs.StringVar(&o.stateFile, "state-file", "", "keep the last stable sequence number, a bound on what was sent and the groups' identities in `FILE`, so a restart resumes past them even if the groups holding them are unreachable")
	fs.StringVar(&o.paced, "receiver-paced", "", "ask for receiver-paced persistence (UM ume_receiver_paced_persistence): blocking (held back at the retention limit until paced receivers consume) or non-blocking (the oldest released at the limit); the stores must run with --allow-receiver-paced-persistence")
	fs.BoolVar(&o.json, "json", false, "print the summary as one JSON object")
	fs.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log as text (key=value pairs) or json (one object per line)")
	fs.BoolVar(&o.showVersion, "version", false, "print the version, the formats the binary reads and writes, and exit")
	o.security = cli.AddSecurityFlags(fs)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	return fs
}

// check checks the flags against each other and works out the flight
// behaviour and session ID; its errors name the flag (bad usage).
func (o *options) check() error {
	switch {
	case o.payload != "text" && o.payload != "random":
		return fmt.Errorf("--payload %q: want text or random", o.payload)
	case o.source == "":
		return errors.New("--source is required")
	case wire.CheckSourceName(o.source) != nil:
		return fmt.Errorf("--source: %w", wire.CheckSourceName(o.source))
	case !o.stdin && o.count < 1:
		return fmt.Errorf("--count must be at least 1, got %d", o.count)
	case o.size < 0 || o.size > 8<<20:
		return fmt.Errorf("--size must be 0..%d bytes, got %d", 8<<20, o.size)
	case o.rate < 0:
		return fmt.Errorf("--rate must not be negative, got %v", o.rate)
	case o.paced != "" && o.paced != string(publisher.PacingBlocking) && o.paced != string(publisher.PacingNonBlocking):
		return fmt.Errorf("--receiver-paced %q: want blocking or non-blocking", o.paced)
	case o.flight < 1:
		return fmt.Errorf("--flight-size must be at least 1, got %d", o.flight)
	case o.flightBytes < 0:
		return fmt.Errorf("--flight-size-bytes must not be negative (0: no limit), got %d", o.flightBytes)
	case o.lifetime < 0:
		return fmt.Errorf("--stability-lifetime must not be negative (0: never), got %v", o.lifetime)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout must be positive, got %v", o.timeout)
	case o.sources < 1 || o.sources > maxSources:
		return fmt.Errorf("--sources must be 1..%d, got %d", maxSources, o.sources)
	case o.connections != "shared" && o.connections != "per-source":
		return fmt.Errorf("--connections %q: want shared or per-source", o.connections)
	case o.sources > 1 && o.stdin:
		return errors.New("--sources and --stdin do not go together: standard input is one stream")
	}
	switch o.flightBehavior {
	case "block":
		o.behavior = publisher.FlightBlock
	case "notify":
		o.behavior = publisher.FlightNotify
	default:
		return fmt.Errorf("--flight-size-behavior %q: want block or notify", o.flightBehavior)
	}
	if o.sessionID != "" {
		id, err := strconv.ParseUint(o.sessionID, 0, 64)
		if err != nil || id > publisher.MaxSessionID {
			return fmt.Errorf("--session-id %q: want a number 0..0xFFFFFFFFFFFFFFFE (decimal, 0x hex or 0 octal; 0: none)", o.sessionID)
		}
		o.session = id
	}
	return nil
}

// resolve works out, from the flags and the deployment, what the
// publishers are given: the logger, the stores' groups, the registration
// (RegID or session), the security, and the intergroup and intragroup
// stability. Its errors are bad usage.
func (o *options) resolve(stderr io.Writer) (groups [][]string, behaviour quorum.Behavior, log *slog.Logger, err error) {
	log, err = cli.Logger(stderr, o.logLevel, o.logFormat)
	if err != nil {
		return nil, 0, nil, err
	}
	list, d, err := cli.Stores(o.deployment, *o.stores)
	if err != nil {
		return nil, 0, nil, err
	}
	groups = list.Groups
	list.LogDomains(log)
	o.regID, o.regIDs = list.RegID, list.RegIDs
	if (o.regID != 0 || o.regIDs != nil) && o.session != 0 {
		return nil, 0, nil, errors.New("give a RegID in the store list or --session-id, not both (each names the registration)")
	}
	tlsCfg, token, err := cli.ClientSecurity(d, *o.security)
	if err != nil {
		return nil, 0, nil, err
	}
	o.tls, o.token = tlsCfg, token
	behaviour = quorum.Any
	if o.intergroup == "" && d != nil {
		o.intergroup = d.Stability.Intergroup
	}
	if o.intergroup != "" {
		if behaviour, err = quorum.ParseBehavior(o.intergroup); err != nil {
			return nil, 0, nil, fmt.Errorf("--intergroup: %w", err)
		}
	}
	if o.intragroup != "" {
		if o.intra, err = quorum.ParseIntragroupBehavior(o.intragroup); err != nil {
			return nil, 0, nil, fmt.Errorf("--intragroup: %w", err)
		}
		// The stores apply the stricter of the deployment's and the
		// source's: asking for a weaker one would not get it.
		if d != nil {
			floor, _ := quorum.ParseIntragroupBehavior(d.Stability.WithDefaults().Intragroup)
			if o.intra < floor {
				return nil, 0, nil, fmt.Errorf("--intragroup %s: the deployment's stores apply at least intragroup %q (stability.intragroup in %s); ask for it or a stricter one", o.intragroup, floor, o.deployment)
			}
		}
	}
	return groups, behaviour, log, nil
}
