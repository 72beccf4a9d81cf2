package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// options are the flags of `nexo-bench run`.
type options struct {
	URL        string
	InProcess  bool
	Scenario   string
	Label      string
	Rate       float64
	Inflight   int
	Await      string
	Duration   time.Duration
	Warmup     time.Duration
	Grace      time.Duration
	AckTimeout time.Duration
	Payload    int

	Pairs       int
	Groups      int
	Members     int
	OnlineShare float64
	Connections int

	DropShare    float64
	Offline      time.Duration
	DeliveredAck time.Duration

	Prefix   string
	Password string
	Keep     bool

	SetupConcurrency int
	DialConcurrency  int

	Out        string
	HTML       string
	Compare    string
	CompareURL string
	Repeat     int
	Quiet      bool
	CPUProfile string
	// SearchProbe: every SearchProbe-th message carries a word of its own
	// and is searched for after its ACK(saved) (0 = off).
	SearchProbe int
	// PictureShare and ActionShare are the chat mix (mix.go): shares of
	// sends that are pictures (102) and actions on earlier messages.
	PictureShare float64
	ActionShare  float64
	// compareSettings is --compare when it names start-time settings: B
	// is then a second in-process server at CompareURL (compareSettings).
	compareSettings string

	Server serverOptions
	// Place, when set, chooses the instances (base URLs) of each
	// single-chat pair's sender and receiver instead of the --url list's
	// round-robin: the cluster step's local and cross placements. Not a flag.
	Place func(senderID, receiverID string) (senderURL, receiverURL string)
}

// serverOptions configure the in-process server (--inprocess).
type serverOptions struct {
	MySQLDSN  string
	RedisAddr string
	// RedisMode, RedisAddrs, RedisMaster: the in-process server's
	// redis.mode, redis.addrs (comma-separated) and redis.master_name.
	RedisMode   string
	RedisAddrs  string
	RedisMaster string
	Mode        string // initial switches, e.g. "two_phase.enabled=false"
	FreshDB     bool   // drop and recreate the database first (nexo_bench* only)
	// Env is NEXO_ variables applied last (a suite step's own server, e.g.
	// webhooks on); not a flag.
	Env []string
	// KeyPrefix, when set, is redis.key_prefix instead of a fresh random
	// one, and Close leaves the keys: the cluster step's instances share it
	// and delete it after the last one stops. Not a flag.
	KeyPrefix string
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.URL, "url", "http://127.0.0.1:8080", "Nexo base URL (HTTP API and /ws); a comma-separated list spreads WebSocket connections over the instances round-robin (HTTP goes to the first)")
	fs.BoolVar(&o.InProcess, "inprocess", false, "start Nexo in this process against --mysql-dsn and --redis-addr instead of using --url")
	fs.StringVar(&o.Scenario, "scenario", "single", "single | group | connect | reconnect | upload (the upload command: uploads per size class, its own flags)")
	fs.StringVar(&o.Label, "label", "", "name of the run in reports (default: derived from the scenario and load)")
	fs.Float64Var(&o.Rate, "rate", 1000, "open loop: target msg/s over all senders, each message due at a scheduled time; 0 selects the closed loop")
	fs.IntVar(&o.Inflight, "inflight", 1, "closed loop (--rate 0): messages in flight per sender")
	fs.StringVar(&o.Await, "await", "accepted", "closed loop: what frees an in-flight slot: accepted (the first ACK) or saved")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "measured sending time (after the warm-up)")
	fs.DurationVar(&o.Warmup, "warmup", 2*time.Second, "sending time before measuring starts")
	fs.DurationVar(&o.Grace, "grace", 5*time.Second, "after sending stops, the drain waits for outstanding ACKs and pushes until nothing has arrived for this long (2 min at most); what is missing then counts as lost")
	fs.DurationVar(&o.AckTimeout, "ack-timeout", 10*time.Second, "closed loop: give up waiting for an answer after this long (the message counts as unanswered)")
	fs.IntVar(&o.Payload, "payload", 64, "message text size in bytes")
	fs.IntVar(&o.Pairs, "pairs", 50, "single/reconnect: sender->receiver pairs (2 connections each)")
	fs.IntVar(&o.Groups, "groups", 10, "group: number of groups")
	fs.IntVar(&o.Members, "members", 11, "group: members per group (the sender included)")
	fs.Float64Var(&o.OnlineShare, "online-share", 1, "group: share of members connected (0-1]; the others only count as members")
	fs.IntVar(&o.Connections, "connections", 1000, "connect: connections to open (10 per user, one per platform)")
	fs.Float64Var(&o.DropShare, "drop-share", 0.5, "reconnect: share of receivers dropped mid-run")
	fs.DurationVar(&o.Offline, "offline", 2*time.Second, "reconnect: how long dropped receivers stay away")
	fs.DurationVar(&o.DeliveredAck, "delivered-ack", -1, "how often receivers report their contiguous seq with 1101 delivered (0 = never; default: 200ms for reconnect, whose resend starts from that cursor, never otherwise)")
	fs.StringVar(&o.Prefix, "prefix", "", "user-ID prefix; reusing one reuses its accounts (default: a fresh random prefix)")
	fs.StringVar(&o.Password, "password", "nexo-bench-pw", "password of the bench's accounts")
	fs.BoolVar(&o.Keep, "keep", false, "keep groups and sessions at the end (default: dismiss groups, log out)")
	fs.IntVar(&o.SetupConcurrency, "setup-concurrency", 16, "parallel HTTP calls while registering, logging in and creating groups")
	fs.IntVar(&o.DialConcurrency, "dial-concurrency", 256, "parallel WebSocket handshakes")
	fs.StringVar(&o.Out, "out", "", "write the JSON result here")
	fs.StringVar(&o.HTML, "html", "", "write the HTML report here")
	fs.StringVar(&o.Compare, "compare", "", "in-process: run again with these switches, alternating, e.g. two_phase.enabled=false; other keys (e.g. search.enabled=false) start a second server with them")
	fs.StringVar(&o.CompareURL, "compare-url", "", "remote: run against this second deployment, alternating with --url")
	fs.IntVar(&o.Repeat, "repeat", 3, "with --compare/--compare-url: runs per side (medians are reported)")
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress line")
	fs.IntVar(&o.SearchProbe, "search-probe", 0, "single/group: every Nth message carries a word of its own, and after its ACK(saved) its sender searches for it (POST /msg/search, every 20 ms, 5 s at most): reports how soon a saved message is searchable; 0 = off")
	registerMix(fs, o)
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of this process (with --inprocess: server and client together) here")
	o.Server.register(fs)
}

func (s *serverOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&s.MySQLDSN, "mysql-dsn", "root:@tcp(127.0.0.1:3306)/nexo_bench?charset=utf8mb4&parseTime=true&loc=UTC",
		"--inprocess: MariaDB/MySQL DSN (the database is created if missing)")
	fs.StringVar(&s.RedisAddr, "redis-addr", "127.0.0.1:6379", "--inprocess: Redis address (keys get a fresh prefix per process)")
	fs.StringVar(&s.RedisMode, "redis-mode", "standalone", "--inprocess: redis.mode (standalone | cluster | sentinel)")
	fs.StringVar(&s.RedisAddrs, "redis-addrs", "", "--inprocess, cluster/sentinel: seed nodes or sentinels, comma-separated")
	fs.StringVar(&s.RedisMaster, "redis-master-name", "", "--inprocess, sentinel: the master's name")
	fs.StringVar(&s.Mode, "mode", "", "--inprocess: initial pipeline switches, e.g. two_phase.enabled=false")
	fs.BoolVar(&s.FreshDB, "fresh-db", false, "--inprocess: drop and recreate the database first (refused unless it is named nexo_bench*)")
}

// check validates the combination of flags.
func (o *options) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch o.Scenario {
	case "single", "group", "connect", "reconnect":
	default:
		bad("--scenario %q: want single, group, connect or reconnect", o.Scenario)
	}
	if o.Rate < 0 {
		bad("--rate must not be negative")
	}
	if o.SearchProbe < 0 || o.SearchProbe > 0 && o.Scenario != "single" && o.Scenario != "group" {
		bad("--search-probe must be 0 or positive, and only with --scenario single or group")
	}
	errs = append(errs, o.checkMix()...)
	if o.Rate == 0 && o.Inflight < 1 {
		bad("--inflight must be at least 1 in the closed loop (--rate 0)")
	}
	if o.Await != ackAccepted && o.Await != ackSaved {
		bad("--await %q: want accepted or saved", o.Await)
	}
	if o.Duration <= 0 || o.Warmup < 0 || o.Grace < 0 {
		bad("--duration must be positive; --warmup and --grace not negative")
	}
	if o.Payload < 1 || o.Payload > 50000 {
		bad("--payload must be 1-50000 bytes")
	}
	if o.Pairs < 1 || o.Groups < 1 || o.Members < 2 || o.Connections < 1 {
		bad("--pairs, --groups, --connections must be at least 1 and --members at least 2")
	}
	if o.OnlineShare <= 0 || o.OnlineShare > 1 || o.DropShare < 0 || o.DropShare > 1 {
		bad("--online-share must be in (0, 1] and --drop-share in [0, 1]")
	}
	if o.Compare != "" && !o.InProcess {
		bad("--compare switches an in-process server: add --inprocess, or compare two deployments with --compare-url")
	}
	if o.Compare != "" && o.CompareURL != "" {
		bad("--compare and --compare-url exclude each other")
	}
	if o.DeliveredAck < 0 {
		o.DeliveredAck = 0
		if o.Scenario == "reconnect" {
			o.DeliveredAck = 200 * time.Millisecond
		}
	}
	if o.Repeat < 1 {
		bad("--repeat must be at least 1")
	}
	if o.Prefix != "" && !validID(o.Prefix) || len(o.Prefix) > 40 {
		bad("--prefix: 1-40 of [A-Za-z0-9_-]")
	}
	return errors.Join(errs...)
}

func validID(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// label names a run in tables and file names.
func (o *options) label() string {
	if o.Label != "" {
		return o.Label
	}
	var b strings.Builder
	b.WriteString(o.Scenario)
	switch o.Scenario {
	case "single", "reconnect":
		fmt.Fprintf(&b, "-%dpairs", o.Pairs)
	case "group":
		fmt.Fprintf(&b, "-%dx%d", o.Groups, o.Members)
	case "connect":
		fmt.Fprintf(&b, "-%d", o.Connections)
		return b.String()
	}
	if o.Rate > 0 {
		fmt.Fprintf(&b, "-%gmsgs", o.Rate)
	} else {
		fmt.Fprintf(&b, "-closed%d", o.Inflight)
	}
	return b.String()
}

// params copies the load parameters into a result.
func (o *options) params() Params {
	p := Params{DurationS: o.Duration.Seconds(), WarmupS: o.Warmup.Seconds(), GraceS: o.Grace.Seconds(), Payload: o.Payload}
	switch o.Scenario {
	case "single", "reconnect":
		p.Pairs = o.Pairs
	case "group":
		p.Groups, p.Members, p.OnlineShare = o.Groups, o.Members, o.OnlineShare
	case "connect":
		p.Connections, p.Payload = o.Connections, 0
		return p
	}
	p.PictureShare, p.ActionShare = o.PictureShare, o.ActionShare
	if o.Rate > 0 {
		p.Loop, p.Rate = "open", o.Rate
	} else {
		p.Loop, p.Inflight, p.Await = "closed", o.Inflight, o.Await
	}
	return p
}
