package main

// The results of a run: what --json prints and the Markdown is made from.

type config struct {
	Runs       int      `json:"runs"`
	Count      int      `json:"count"`
	Sizes      []int    `json:"sizes"`
	Sources    int      `json:"sources"`
	Flight     int      `json:"flight"`
	Payload    string   `json:"payload"` // payloadRandom or payloadText
	Systems    []string `json:"systems"` // system names (sysUM...)
	Throughput bool     `json:"throughput"`
	HalfLoad   bool     `json:"half_load"`
	Catchup    bool     `json:"catchup"`
	CatchupMB  int      `json:"catchup_mib,omitempty"`
	// CatchupLayouts are the layouts the catch-up runs on, in order (1x3,
	// 2x3; see hosts.go).
	CatchupLayouts []string `json:"catchup_layouts,omitempty"`
	DiskMiB        int      `json:"disk_test_mib,omitempty"`
	Memory         bool     `json:"memory"`
	MemoryMB       int      `json:"memory_mib,omitempty"`
	CPUProfile     string   `json:"cpuprofile,omitempty"`
	StoreArgs      string   `json:"store_args,omitempty"`
	LogStore       string   `json:"log_store,omitempty"`
	// Soak is the soak's duration (0: no soak), in seconds in the JSON.
	SoakS           float64 `json:"soak_s,omitempty"`
	SoakIntervalS   float64 `json:"soak_interval_s,omitempty"`
	SoakSize        int     `json:"soak_size,omitempty"`
	SoakRate        float64 `json:"soak_rate,omitempty"`
	SoakRetentionMB int     `json:"soak_retention_mib,omitempty"`
	SoakStoreArgs   string  `json:"soak_store_args,omitempty"`
	// Rates are the offered rates (msgs/s in total) of the fixed-rate
	// table (none: no table); each run is RateSeconds of messages.
	Rates       []float64 `json:"rates,omitempty"`
	RateSeconds float64   `json:"rate_seconds,omitempty"`
	// SourcesList are the Ks of the sources table (none: no table), each
	// run SourcesCount messages in all of SourcesSize bytes.
	SourcesList  []int `json:"sources_list,omitempty"`
	SourcesCount int   `json:"sources_count,omitempty"`
	SourcesSize  int   `json:"sources_size,omitempty"`
	// SourcesConnections is umpub's --connections for the sources table
	// ("": umpub's default, shared).
	SourcesConnections string `json:"sources_connections,omitempty"`
	Repo               string `json:"-"`
	Dir                string `json:"-"`
	Keep               bool   `json:"-"`
	JSON               bool   `json:"-"`
	JSONOut            string `json:"-"`
}

// System names in the results.
const (
	sysUM        = "umstore"         // umstored dev: two groups of three stores, one process
	sysUM1       = "umstore 1 group" // three umstored run hosts, one group of three
	sysJSSync    = "JetStream sync_always"
	sysJSDefault = "JetStream default"
)

// allSystems are the systems in the order of the first repetition, with
// the names --systems takes.
var allSystems = []struct{ flag, name string }{
	{"umstore", sysUM}, {"umstore-1g", sysUM1}, {"js-sync", sysJSSync}, {"js-default", sysJSDefault},
}

// storesOf is how many copies of each message a system keeps: the stores
// (or JetStream servers) that write it.
func storesOf(system string) int {
	if system == sysUM {
		return 6
	}
	return 3
}

func isUmstore(system string) bool { return system == sysUM || system == sysUM1 }

type runResult struct {
	System   string  `json:"system"`
	Size     int     `json:"size"`
	Run      int     `json:"run"`
	Rate     float64 `json:"rate,omitempty"`    // offered msgs/s (half-load and fixed-rate runs)
	Sources  int     `json:"sources,omitempty"` // K of a sources-table run
	Messages int     `json:"messages"`
	MsgsPerS float64 `json:"msgs_per_s"`
	MBPerS   float64 `json:"mb_per_s"`
	ElapsedS float64 `json:"elapsed_s"`
	// RegisterS is how long umpub's K sources took to register, before
	// any sent (sources-table runs; not in ElapsedS).
	RegisterS float64 `json:"register_s,omitempty"`
	LatencyUS Latency `json:"latency_us"`
	// Stores is how many stores (JetStream: servers) keep each message.
	Stores int `json:"stores"`
	// DiskWriteBytes is what the system's servers wrote to storage during
	// the run, all replicas together (write_bytes in /proc/PID/io, see
	// procio.go): umstored's (the three hosts' together for umstore 1
	// group) for umstore, the bench process's for JetStream. 0 if /proc
	// could not be read.
	DiskWriteBytes int64 `json:"disk_write_bytes"`
	// CPUSeconds is the CPU time of umstored (the hosts' together) for
	// umstore; for JetStream, of the whole bench process: the servers and
	// the publishers. 0 if /proc could not be read.
	CPUSeconds float64 `json:"cpu_s,omitempty"`
	// ClientCPUSeconds is umpub's CPU time (umstore only), to add to
	// CPUSeconds for a figure comparable with JetStream's.
	ClientCPUSeconds float64 `json:"client_cpu_s,omitempty"`
	Error            string  `json:"error,omitempty"`
}

// writePerPayload is the bytes written to storage per byte of payload
// acknowledged, all stores together, or 0 if unknown.
func (r runResult) writePerPayload() float64 {
	return ratio(float64(r.DiskWriteBytes), float64(r.Messages)*float64(r.Size))
}

// writePerPayloadPerStore is writePerPayload per store (or JetStream
// server): what one copy costs.
func (r runResult) writePerPayloadPerStore() float64 {
	return ratio(r.writePerPayload(), float64(max(1, r.Stores)))
}

// cpuPerMillion is the CPU seconds, servers and client, per million
// messages acknowledged, or 0 if unknown.
func (r runResult) cpuPerMillion() float64 {
	if r.CPUSeconds == 0 {
		return 0
	}
	return ratio(r.CPUSeconds+r.ClientCPUSeconds, float64(r.Messages)/1e6)
}

type row struct {
	Size     int     `json:"size"`
	System   string  `json:"system"`
	Stores   int     `json:"stores"`
	Rate     float64 `json:"rate,omitempty"`
	MsgsPerS float64 `json:"median_msgs_per_s"`
	MBPerS   float64 `json:"median_mb_per_s"`
	P50US    float64 `json:"median_p50_us"`
	P99US    float64 `json:"median_p99_us"`
	P999US   float64 `json:"median_p999_us"`
	// WritePerPayload is the median of the runs' bytes written to storage
	// per byte of payload, all stores together (runs without a reading
	// left out; 0: none had one); WritePerPayloadPerStore the same ÷ Stores.
	WritePerPayload         float64 `json:"median_disk_bytes_per_payload_byte"`
	WritePerPayloadPerStore float64 `json:"median_disk_bytes_per_payload_byte_per_store"`
	// CPUSeconds and ClientCPUSeconds are medians of the runs' (see
	// runResult); CPUPerMillion is the median of the runs' CPU seconds,
	// servers and client, per million messages.
	CPUSeconds       float64   `json:"median_cpu_s,omitempty"`
	ClientCPUSeconds float64   `json:"median_client_cpu_s,omitempty"`
	CPUPerMillion    float64   `json:"median_cpu_s_per_million_msgs,omitempty"`
	Runs             []float64 `json:"runs_msgs_per_s"`
	P99Runs          []float64 `json:"runs_p99_us"`
	Failed           int       `json:"failed_runs,omitempty"`
	// Ratios of umstore's median to this system's (throughput), or this
	// system's p99 to umstore's (half load: > 1 means umstore is better);
	// Ratio1G the same with umstore 1 group.
	Ratio   float64 `json:"umstore_ratio,omitempty"`
	Ratio1G float64 `json:"umstore_1group_ratio,omitempty"`
}

type machine struct {
	NProc     int    `json:"nproc"`
	CPU       string `json:"cpu"`
	Memory    string `json:"memory"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
	Disk      string `json:"disk"`
	GOMAXPROC int    `json:"gomaxprocs"`
}

// profile is one CPU profile of umstored and its top entries.
type profile struct {
	System string `json:"system"`
	Size   int    `json:"size"`
	File   string `json:"file"`
	Top    string `json:"top"` // go tool pprof -top (flat); FILE.top.txt adds -cum
}

type results struct {
	Started      string           `json:"started"`
	Revision     string           `json:"umstore_revision"`
	StoreArgs    string           `json:"umstored_extra_args,omitempty"`
	UmpubPayload string           `json:"umpub_payload"` // how umpub gets random payloads: "--payload random" or "--stdin"
	Machine      machine          `json:"machine"`
	Config       config           `json:"config"`
	Runs         []runResult      `json:"runs"`
	Throughput   []row            `json:"throughput"`
	HalfRuns     []runResult      `json:"half_load_runs,omitempty"`
	HalfLoad     []row            `json:"half_load,omitempty"`
	FixedRuns    []runResult      `json:"fixed_rate_runs,omitempty"`
	FixedRate    []fixedRow       `json:"fixed_rate,omitempty"`
	StageRuns    []stageRun       `json:"stage_runs,omitempty"`
	Stages       []stageRow       `json:"stages,omitempty"`
	SourcesRuns  []runResult      `json:"sources_runs,omitempty"`
	Sources      []sourcesRow     `json:"sources,omitempty"`
	Catchup      []*catchupResult `json:"catchup,omitempty"`
	Memory       *memoryResult    `json:"memory,omitempty"`
	Soak         *soakResult      `json:"soak,omitempty"`
	Profiles     []profile        `json:"cpu_profiles,omitempty"`
	Goals        []goal           `json:"goals"`
	LoadAvg      []string         `json:"loadavg"` // /proc/loadavg at the start and the end
	Notes        []string         `json:"notes,omitempty"`
	ElapsedS     float64          `json:"elapsed_s"`
}
