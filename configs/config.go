// Package configs holds Nexo's typed configuration: its defaults, how it is
// loaded (a YAML file, then environment overrides), and its validation. It is
// the only package that reads configuration files or the environment.
package configs

import (
	"path/filepath"
	"time"
)

// Config is the whole configuration. Each section is handed only to the
// component that needs it. configs/nexo.yaml documents every key.
type Config struct {
	HTTP     HTTP     `koanf:"http"`
	MySQL    MySQL    `koanf:"mysql"`
	SQLite   SQLite   `koanf:"sqlite"`
	Redis    Redis    `koanf:"redis"`
	JWT      JWT      `koanf:"jwt"`
	Auth     Auth     `koanf:"auth"`
	Log      Log      `koanf:"log"`
	WS       WS       `koanf:"ws"`
	TwoPhase TwoPhase `koanf:"two_phase"`
	Streams  Streams  `koanf:"streams"`
	Save     Save     `koanf:"save"`
	Seq      Seq      `koanf:"seq"`
	Msg      Msg      `koanf:"msg"`
	Push     Push     `koanf:"push"`
	Admin    Admin    `koanf:"admin"`
	Group    Group    `koanf:"group"`
	Sync     Sync     `koanf:"sync"`
	Cluster  Cluster  `koanf:"cluster"`
	// ServerAPI, Webhooks: the integration surface for an app's backend
	// (docs/integration.md, docs/webhooks.md).
	ServerAPI ServerAPI `koanf:"server_api"`
	Webhooks  Webhooks  `koanf:"webhooks"`
	Limits    Limits    `koanf:"limits"`
	Metrics   Metrics   `koanf:"metrics"`
	Search    Search    `koanf:"search"`
	Objects   Objects   `koanf:"objects"`
	// Retention: how long messages are kept, and what an account deletion
	// erases (docs/privacy.md).
	Retention Retention `koanf:"retention"`
	// Moderation: the word filter (docs/moderation.md); SIGHUP reloads it.
	Moderation Moderation `koanf:"moderation"`
	// Memory: how the process hands memory back to the system when idle
	// (docs/deploy.md, "Garbage collector and memory").
	Memory Memory `koanf:"memory"`
}

// Memory configures the process's memory upkeep (docs/deploy.md).
type Memory struct {
	// IdleRelease is how often the process checks whether it is idle — it
	// allocated less than IdleAllocBytes since the previous check — and, if
	// so and more than IdleAllocBytes of heap lies unused, collects and
	// returns the free heap to the system (runtime/debug.FreeOSMemory). Go
	// by itself keeps a heap sized for the last load until its next
	// collection, which an idle process may not run for two minutes, and
	// returns it slowly. 0 turns the check off.
	IdleRelease time.Duration `koanf:"idle_release"`
	// IdleAllocBytes is the allocation between two checks below which the
	// process counts as idle, and the unused heap above which a release is
	// worth a collection.
	IdleAllocBytes int64 `koanf:"idle_alloc_bytes"`
}

// Retention configures message retention and account erasure
// (docs/privacy.md).
type Retention struct {
	// MaxAge deletes messages older than this, in every conversation; 0
	// keeps them forever (a conversation may still set a shorter
	// retention of its own).
	MaxAge time.Duration `koanf:"max_age"`
	// EraseDeletedUsers deletes a deleted account's messages too; when
	// false they stay, shown under the user_id the deletion reserved.
	EraseDeletedUsers bool `koanf:"erase_deleted_users"`
	// CleanInterval is the time between two sweeps of the cleaner (one
	// instance of the cluster sweeps at a time).
	CleanInterval time.Duration `koanf:"clean_interval"`
	// CleanBatch is the most messages one delete statement removes.
	CleanBatch int `koanf:"clean_batch"`
	// CleanPause is the cleaner's wait between two batches, which leaves
	// the database to the message path (docs/bench/retention.md).
	CleanPause time.Duration `koanf:"clean_pause"`
	// CleanPauseRatio stretches that wait to this many times the last
	// batch's own duration, so the cleaner keeps the database busy at most
	// 1/(1+ratio) of the time whatever its deletes cost (with ratio 3: a
	// quarter). 0: clean_pause alone.
	CleanPauseRatio float64 `koanf:"clean_pause_ratio"`
}

// Word filter actions (moderation.action).
const (
	ModerationRefuse = "refuse"
	ModerationMask   = "mask"
)

// Moderation configures the word filter applied to what users write:
// message text (msg_type 101 and 106, and a custom message's top-level
// search_text), nicknames and group names (docs/moderation.md). Both lists
// are merged; matching ignores letter case and full/half width. SIGHUP
// reloads all three keys (the file is read again).
type Moderation struct {
	// BlockedWords are the blocked words or phrases.
	BlockedWords []string `koanf:"blocked_words"`
	// BlockedWordsFile, when set, is a UTF-8 file of more: one per line;
	// blank lines and lines starting with # are skipped.
	BlockedWordsFile string `koanf:"blocked_words_file"`
	// Action is refuse (the write fails with blocked_word, the default) or
	// mask (each matched character becomes *).
	Action string `koanf:"action"`
}

// Search configures message, user and group search (docs/search.md).
type Search struct {
	// Enabled indexes saved messages and serves the search routes. On
	// MariaDB it needs the Mroonga engine (mariadb-plugin-mroonga): the
	// server refuses to start without it.
	Enabled bool `koanf:"enabled"`
	// Timeout bounds one search, on the database too; past it the request
	// fails with search_timeout.
	Timeout time.Duration `koanf:"timeout"`
	// IndexBatch is the most messages the indexing stage writes at once.
	IndexBatch int `koanf:"index_batch"`
	// IndexWait is how long the indexing stage lets messages gather after
	// a read that did not fill IndexBatch: a message becomes searchable up
	// to this much later, and at light load the stage writes one batch per
	// IndexWait instead of one per message (docs/search.md). 0: no wait.
	IndexWait time.Duration `koanf:"index_wait"`
}

// HTTP configures the listener shared by the HTTP API and WebSocket.
type HTTP struct {
	// Addr is host:port to listen on.
	Addr string `koanf:"addr"`
	// ShutdownTimeout bounds graceful shutdown of the listener.
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
	// MaxBodyBytes caps an HTTP request body.
	MaxBodyBytes int `koanf:"max_body_bytes"`
	// ReadHeaderTimeout is how long a connection has, from accept, to
	// deliver its first request (headers and body), and each later request
	// of a keep-alive connection from its first byte; 0 disables.
	ReadHeaderTimeout time.Duration `koanf:"read_header_timeout"`
	// IdleTimeout closes a keep-alive connection with no request for this
	// long; 0 is Hertz's default (3m).
	IdleTimeout time.Duration `koanf:"idle_timeout"`
	// MaxConns caps the open connections (HTTP and WebSocket); 0: no cap.
	MaxConns int `koanf:"max_conns"`
	// MaxConnsPerIP caps the open connections from one peer address
	// (trusted proxies are exempt); 0: no cap.
	MaxConnsPerIP int `koanf:"max_conns_per_ip"`
	// TrustedProxies lists the CIDRs of reverse proxies whose
	// X-Forwarded-For / X-Real-IP name the client; from anyone else the
	// TCP peer is the client (per-IP limits use it). Empty trusts none.
	TrustedProxies []string `koanf:"trusted_proxies"`
	// CORS answers browsers on other origins (preflights included).
	CORS CORS `koanf:"cors"`
}

// CORS configures cross-origin HTTP requests (hertz-contrib/cors).
type CORS struct {
	// AllowedOrigins lists origins allowed to call the HTTP API; "*" allows
	// any. Empty falls back to ws.allowed_origins, so both checks share one
	// default: same origin only.
	AllowedOrigins []string `koanf:"allowed_origins"`
	// AllowedMethods and AllowedHeaders are answered to preflights.
	AllowedMethods []string `koanf:"allowed_methods"`
	AllowedHeaders []string `koanf:"allowed_headers"`
	// MaxAge is how long a browser may cache a preflight's answer.
	MaxAge time.Duration `koanf:"max_age"`
}

// MySQL configures the database. An empty DSN (with an empty Redis address)
// selects the embedded default.
type MySQL struct {
	DSN             string        `koanf:"dsn"`
	MaxOpenConns    int           `koanf:"max_open_conns"`
	MaxIdleConns    int           `koanf:"max_idle_conns"`
	ConnMaxLifetime time.Duration `koanf:"conn_max_lifetime"`
}

// SQLite configures the embedded database file used when no DSN is set.
type SQLite struct {
	Path string `koanf:"path"`
}

// Redis modes (redis.mode).
const (
	RedisStandalone = "standalone"
	RedisCluster    = "cluster"
	RedisSentinel   = "sentinel"
)

// Redis configures the Redis client. An empty Addr and Addrs (with an empty
// MySQL DSN) selects the embedded in-process server. docs/deploy.md
// describes the three modes.
type Redis struct {
	// Mode is standalone (one server, Addr), cluster (Redis Cluster, Addrs
	// are seed nodes) or sentinel (Addrs are sentinels, MasterName the
	// monitored master).
	Mode string `koanf:"mode"`
	// Addr is the standalone server's host:port.
	Addr string `koanf:"addr"`
	// Addrs lists cluster seed nodes or sentinel addresses (host:port). In
	// standalone mode one entry may stand in for Addr.
	Addrs []string `koanf:"addrs"`
	// MasterName is the master's name in the sentinels' configuration.
	MasterName string `koanf:"master_name"`
	// Username and Password authenticate to the Redis servers (ACL user;
	// empty username = the default user).
	Username string `koanf:"username"`
	Password string `koanf:"password"`
	// SentinelPassword authenticates to the sentinels (sentinel mode only;
	// empty = none).
	SentinelPassword string `koanf:"sentinel_password"`
	// TLS encrypts every connection (servers and sentinels).
	TLS      RedisTLS `koanf:"tls"`
	DB       int      `koanf:"db"`
	PoolSize int      `koanf:"pool_size"`
	// KeyPrefix is prepended to every key Nexo writes, so several deployments
	// (or tests) can share one Redis.
	KeyPrefix string `koanf:"key_prefix"`
	// MemoryDegradedRatio: /readyz reports "degraded" (still 200) when a
	// Redis server uses this share of its maxmemory or more; 0 turns the
	// check off, as does a server without maxmemory.
	MemoryDegradedRatio float64 `koanf:"memory_degraded_ratio"`
}

// RedisTLS configures TLS to Redis. With Enabled and an empty CAFile the
// system roots verify the server.
type RedisTLS struct {
	Enabled bool `koanf:"enabled"`
	// CAFile is a PEM bundle of the CAs that sign the servers' certificates.
	CAFile string `koanf:"ca_file"`
	// ServerName overrides the name checked in the server certificate
	// (default: the host of the address dialled).
	ServerName string `koanf:"server_name"`
}

// Addresses returns the configured server (or seed/sentinel) addresses:
// Addrs, or Addr alone when Addrs is empty.
func (r Redis) Addresses() []string {
	if len(r.Addrs) > 0 {
		return r.Addrs
	}
	if r.Addr != "" {
		return []string{r.Addr}
	}
	return nil
}

// JWT configures token signing (HS256).
type JWT struct {
	// Secret must be at least 32 bytes; only the embedded default may leave it
	// empty, and then a random one is generated at start.
	Secret string        `koanf:"secret"`
	TTL    time.Duration `koanf:"ttl"`
	Issuer string        `koanf:"issuer"`
}

// Auth configures password hashing, self-registration and tokens signed
// by the app (external JWT).
type Auth struct {
	// BcryptCost is the bcrypt work factor (4–31).
	BcryptCost int `koanf:"bcrypt_cost"`
	// HashConcurrency bounds the password hashes (login, register) computed
	// at once; 0 means half the CPUs (at least one), leaving the rest to
	// the other routes during a login flood.
	HashConcurrency int `koanf:"hash_concurrency"`
	// HashWait is how long a login or register waits for a hashing slot
	// before it is refused with server_busy.
	HashWait time.Duration `koanf:"hash_wait"`
	// Registration is "open" (POST /user/register for anyone) or "closed"
	// (users come from the server API or external JWTs). Empty means closed
	// when server_api.keys is set, else open.
	Registration string `koanf:"registration"`
	// ExternalJWT verifies tokens that the app's backend signs.
	ExternalJWT ExternalJWT `koanf:"external_jwt"`
}

// Registration modes (auth.registration).
const (
	RegistrationOpen   = "open"
	RegistrationClosed = "closed"
)

// RegistrationIsOpen reports whether POST /user/register is served, after
// applying the default (closed once the server API is enabled).
func (c *Config) RegistrationIsOpen() bool {
	switch c.Auth.Registration {
	case RegistrationOpen:
		return true
	case RegistrationClosed:
		return false
	}
	return len(c.ServerAPI.Keys) == 0
}

// ExternalJWT configures verification of app-signed JWTs: HS256 with
// Secret, or RS256/ES256/EdDSA with keys from JWKSURL. Either may be set;
// a token is tried against Nexo's own key first.
type ExternalJWT struct {
	// Enabled turns external tokens on.
	Enabled bool `koanf:"enabled"`
	// Secret is the HS256 shared secret (>= 32 bytes); empty disables HS256.
	Secret string `koanf:"secret"`
	// JWKSURL is where the app publishes its public keys (RS256, ES256,
	// EdDSA); keys are cached, refreshed every JWKSRefresh and on an
	// unknown kid (at most once per JWKSMinRefresh).
	JWKSURL        string        `koanf:"jwks_url"`
	JWKSRefresh    time.Duration `koanf:"jwks_refresh"`
	JWKSMinRefresh time.Duration `koanf:"jwks_min_refresh"`
	// Issuer and Audience, when set, must match iss and aud.
	Issuer   string `koanf:"issuer"`
	Audience string `koanf:"audience"`
	// UserIDClaim and PlatformClaim name the claims holding the user ID and
	// the platform (an integer, domain.Platform).
	UserIDClaim   string `koanf:"user_id_claim"`
	PlatformClaim string `koanf:"platform_claim"`
	// DefaultPlatform applies when the token has no platform claim; 0
	// makes the claim required.
	DefaultPlatform int `koanf:"default_platform"`
	// AutoCreate creates the user (nickname = user ID) on first use.
	AutoCreate bool `koanf:"auto_create"`
	// Leeway tolerates clock skew on exp, nbf and iat.
	Leeway time.Duration `koanf:"leeway"`
}

// ServerAPI configures /api/*, the API for the app's backend.
type ServerAPI struct {
	// Keys are the accepted secrets (Authorization: apikey <key>); list two
	// while rotating. Empty disables /api/*.
	Keys []string `koanf:"keys"`
}

// Webhooks configures the HTTP callbacks to the app (docs/webhooks.md).
// An event is sent when its URL (its own, else URL) is non-empty and it is
// listed in Events.
type Webhooks struct {
	// URL receives every enabled event without a URL of its own.
	URL string `koanf:"url"`
	// Secret signs each request: X-Nexo-Signature is
	// "sha256=" + hex(HMAC-SHA256(secret, timestamp + "." + body)), with
	// X-Nexo-Timestamp in Unix seconds. Required when any event is enabled.
	Secret string `koanf:"secret"`
	// Events lists the enabled events: before_send, after_send,
	// user_online, user_offline, group_changed, offline_push.
	Events []string `koanf:"events"`
	// Timeout bounds one asynchronous delivery attempt.
	Timeout time.Duration `koanf:"timeout"`
	// MaxAttempts is how often an asynchronous event is tried before it is
	// dead-lettered; RetryBackoff doubles per attempt up to RetryBackoffMax.
	MaxAttempts     int           `koanf:"max_attempts"`
	RetryBackoff    time.Duration `koanf:"retry_backoff"`
	RetryBackoffMax time.Duration `koanf:"retry_backoff_max"`
	// DeadMaxLen caps the events' dead-letter stream, in entries; 0: no cap.
	DeadMaxLen int64 `koanf:"dead_max_len"`
	// DeadMaxBodyBytes caps the event body kept in a dead-letter entry.
	DeadMaxBodyBytes int `koanf:"dead_max_body_bytes"`
	// Workers is how many deliveries run at once per process.
	Workers int `koanf:"workers"`
	// BatchSize is the most asynchronous events one POST carries (1..128).
	// 1, the default, sends each event as its own request; more sends
	// {"events": [...]} with X-Nexo-Event "batch" (docs/webhooks.md), which
	// a receiver must opt into.
	BatchSize int `koanf:"batch_size"`
	// BeforeSend is the synchronous hook that may reject or rewrite a message.
	BeforeSend BeforeSend `koanf:"before_send"`
	// Per-event URL overrides.
	AfterSend    WebhookEvent `koanf:"after_send"`
	UserOnline   WebhookEvent `koanf:"user_online"`
	UserOffline  WebhookEvent `koanf:"user_offline"`
	GroupChanged WebhookEvent `koanf:"group_changed"`
	// MessageReported: a user reported a message (docs/moderation.md).
	MessageReported WebhookEvent `koanf:"message_reported"`
	// OfflinePush is offline_push's URL: the app's push service.
	OfflinePush OfflinePush `koanf:"offline_push"`
}

// WebhookEvent overrides one event's URL.
type WebhookEvent struct {
	URL string `koanf:"url"`
}

// BeforeSend configures the synchronous before_send hook.
type BeforeSend struct {
	URL string `koanf:"url"`
	// Timeout bounds the call; the send waits for it.
	Timeout time.Duration `koanf:"timeout"`
	// OnError is what a failed or timed-out call means: allow or reject.
	OnError string `koanf:"on_error"`
}

// OfflinePush configures offline_push: one event per recipient with no
// foreground connection, batched over BatchWait.
type OfflinePush struct {
	URL string `koanf:"url"`
	// BatchWait collects one recipient's messages into one event.
	BatchWait time.Duration `koanf:"batch_wait"`
	// Preview is "text" (the start of a text message) or "none".
	Preview string `koanf:"preview"`
	// PreviewChars caps the preview, in characters.
	PreviewChars int `koanf:"preview_chars"`
}

// Webhook event names (webhooks.events) and before_send's on_error.
const (
	EventBeforeSend   = "before_send"
	EventAfterSend    = "after_send"
	EventUserOnline   = "user_online"
	EventUserOffline  = "user_offline"
	EventGroupChanged = "group_changed"
	EventOfflinePush  = "offline_push"
	// EventMessageReported: a user filed a report (POST /msg/report).
	EventMessageReported = "message_reported"

	OnErrorAllow  = "allow"
	OnErrorReject = "reject"

	// EventBatch is X-Nexo-Event of a POST carrying several events
	// (webhooks.batch_size > 1); MaxWebhookBatch caps batch_size at what
	// one read of the event stream returns.
	EventBatch      = "batch"
	MaxWebhookBatch = 128
)

// EventURL returns where event goes: "" when it is not enabled.
func (w *Webhooks) EventURL(event string) string {
	enabled := false
	for _, e := range w.Events {
		enabled = enabled || e == event
	}
	if !enabled {
		return ""
	}
	own := map[string]string{
		EventBeforeSend: w.BeforeSend.URL, EventAfterSend: w.AfterSend.URL, EventUserOnline: w.UserOnline.URL,
		EventUserOffline: w.UserOffline.URL, EventGroupChanged: w.GroupChanged.URL, EventOfflinePush: w.OfflinePush.URL,
		EventMessageReported: w.MessageReported.URL,
	}[event]
	if own != "" {
		return own
	}
	return w.URL
}

// Log configures log/slog.
type Log struct {
	Level  string `koanf:"level"`
	Format string `koanf:"format"`
	// Access logs one line per HTTP request at info level (probes and
	// scrapes at debug), with its request_id, route, status and duration.
	Access bool `koanf:"access"`
	// AcceptPerf logs one line per send from the accept step at info level:
	// the accept script call's and the whole accept's durations, and the
	// length and pending count of the stream it appended to (one pipelined
	// XLEN + XPENDING per send, so only when set).
	AcceptPerf bool `koanf:"accept_perf"`
}

// WS configures WebSocket sessions.
type WS struct {
	// ReadLimit caps one inbound frame, in bytes.
	ReadLimit int64 `koanf:"read_limit"`
	// WriteTimeout is the deadline for writing one frame.
	WriteTimeout time.Duration `koanf:"write_timeout"`
	// PingInterval is how often the server pings.
	PingInterval time.Duration `koanf:"ping_interval"`
	// PongWait closes a connection from which nothing arrived for this long.
	PongWait time.Duration `koanf:"pong_wait"`
	// SendQueue is the outbound queue length per connection, in frames.
	SendQueue int `koanf:"send_queue"`
	// HighWater is the queue length above which a connection counts as unwritable.
	HighWater int `koanf:"high_water"`
	// CloseUnwritableAfter closes a connection that stays above HighWater this long.
	CloseUnwritableAfter time.Duration `koanf:"close_unwritable_after"`
	// LoginPolicy is multi, single_per_platform or single.
	LoginPolicy string `koanf:"login_policy"`
	// RateLimit is requests per second per user (GCRA kept in Redis, shared
	// by every instance, every WebSocket request and HTTP /msg/send); 0
	// disables.
	RateLimit float64 `koanf:"rate_limit"`
	// RateBurst is the bucket size.
	RateBurst int `koanf:"rate_burst"`
	// AllowedOrigins lists Origin values allowed to upgrade; empty allows same
	// host only, "*" allows any.
	AllowedOrigins []string `koanf:"allowed_origins"`
	// PresenceTTL is the TTL of a user's presence record (store.Presence),
	// renewed every PingInterval by the instances holding a connection.
	PresenceTTL time.Duration `koanf:"presence_ttl"`
}

// TwoPhase holds the pipeline switches; SIGHUP reloads them.
type TwoPhase struct {
	// Enabled answers ACK(accepted) after the stream append and saves in the
	// background; false persists in the request path and answers ACK(saved).
	Enabled bool `koanf:"enabled"`
	// DeliverBeforeSaved routes accepted -> deliver -> save instead of
	// accepted -> save -> deliver.
	DeliverBeforeSaved bool `koanf:"deliver_before_saved"`
	// FailOpen falls back to the synchronous path when Redis is unreachable
	// at accept; false refuses with server_busy.
	FailOpen bool `koanf:"fail_open"`
	// IdempotencyTTL is how long Redis remembers (sender_id, client_msg_id).
	IdempotencyTTL time.Duration `koanf:"idempotency_ttl"`
	// AcceptReplicas is how many Redis replicas must acknowledge the accept
	// step's writes (Redis WAIT) before ACK(accepted); 0 waits for none.
	// Read at start (not reloaded by SIGHUP). docs/pipeline.md says what
	// ACK(accepted) is worth with each setting.
	AcceptReplicas int `koanf:"accept_replicas"`
	// AcceptReplicasTimeout bounds that wait; a send whose writes are not
	// acknowledged in time is answered server_busy (its retry finds it).
	AcceptReplicasTimeout time.Duration `koanf:"accept_replicas_timeout"`
	// DuplicateCheckWait bounds how long a two-phase send waits for the
	// database's answer to "is this client_msg_id saved already?" (a retry
	// Redis no longer remembers) before it goes on without it: the ACK
	// never waits longer on the database, and a retry that goes on is
	// still saved once (the save stage finds the original; its ACK(saved)
	// names it). 0 waits for the answer (bounded by 2 s); default 10 ms. docs/pipeline.md,
	// "Idempotency".
	DuplicateCheckWait time.Duration `koanf:"duplicate_check_wait"`
}

// Streams configures the sharded Redis Streams and their consumers.
type Streams struct {
	// Shards is the number of stream shards; shard = hash(conversation_id) % Shards.
	Shards int `koanf:"shards"`
	// ConsumerName names this process in every consumer group; it must be
	// stable across restarts. Empty means the host name.
	ConsumerName string `koanf:"consumer_name"`
	// ReadCount is the most entries one XREADGROUP takes.
	ReadCount int `koanf:"read_count"`
	// Block is how long one XREADGROUP waits for new entries.
	Block time.Duration `koanf:"block"`
	// ClaimMinIdle is how long an entry stays pending before a live consumer
	// reclaims it from a dead one.
	ClaimMinIdle time.Duration `koanf:"claim_min_idle"`
	// TrimInterval is how often fully acknowledged entries are trimmed.
	TrimInterval time.Duration `koanf:"trim_interval"`
	// DeadMaxLen caps each shard's dead-letter stream, in entries; 0: no cap.
	DeadMaxLen int64 `koanf:"dead_max_len"`
	// DeadMaxAge drops dead-letter entries older than this; 0: kept.
	DeadMaxAge time.Duration `koanf:"dead_max_age"`
	// DeadMaxBodyBytes caps the message body kept in a dead-letter entry.
	DeadMaxBodyBytes int `koanf:"dead_max_body_bytes"`
	// DeliverRetryBackoff is the deliver stage's first retry delay after a
	// failed push; it doubles up to DeliverRetryBackoffMax. The deliver
	// stage never dead-letters a push it could not make (a deliver-first
	// message is not saved yet): it retries until the push goes through.
	// The save stage's policy is save.max_attempts and save.retry_backoff.
	DeliverRetryBackoff    time.Duration `koanf:"deliver_retry_backoff"`
	DeliverRetryBackoffMax time.Duration `koanf:"deliver_retry_backoff_max"`
	// Names are the pipeline's stream and consumer-group names. A start
	// that renames them is refused while the old streams hold entries a
	// stage has not finished (docs/pipeline.md, "Changing streams.names").
	Names StreamNames `koanf:"names"`
}

// StreamNames names the pipeline's streams, each per shard behind the key
// prefix and the shard's hash tag ("nexo:{s3}:" + ToSave), and the consumer
// group of each stage. Names are 1–64 characters of A-Z a-z 0-9 . _ -.
type StreamNames struct {
	// ToSave is the save stage's input stream.
	ToSave string `koanf:"to_save"`
	// ToDeliver is the deliver stage's input stream.
	ToDeliver string `koanf:"to_deliver"`
	// Dead is the dead-letter stream.
	Dead string `koanf:"dead"`
	// SaveGroup is the save stage's consumer group on ToSave.
	SaveGroup string `koanf:"save_group"`
	// DeliverGroup is the deliver stage's consumer group on ToDeliver.
	DeliverGroup string `koanf:"deliver_group"`
}

// DefaultStreamNames are the names every deployment used before
// streams.names existed; a deployment with no names recorded used these.
func DefaultStreamNames() StreamNames {
	return StreamNames{ToSave: "to_save", ToDeliver: "to_deliver", Dead: "dead", SaveGroup: "save", DeliverGroup: "deliver"}
}

// Save configures the save stage.
type Save struct {
	// BatchSize is the most rows one INSERT writes.
	BatchSize int `koanf:"batch_size"`
	// BatchWait is how long a save batch that finds no other being saved
	// waits for the other shards' batches to join it (until BatchSize
	// messages wait); see docs/pipeline.md, "Save batches across shards".
	// 0 (the default): no wait — a lone batch is saved at once and the
	// batches that arrive during a save go together when it commits
	// (leader/follower group commit).
	BatchWait time.Duration `koanf:"batch_wait"`
	// MaxAttempts is how many times an entry is tried before it is dead-lettered.
	MaxAttempts int `koanf:"max_attempts"`
	// RetryBackoff is the first retry delay; it doubles up to RetryBackoffMax.
	RetryBackoff    time.Duration `koanf:"retry_backoff"`
	RetryBackoffMax time.Duration `koanf:"retry_backoff_max"`
}

// Seq configures seq leasing.
type Seq struct {
	// LeaseBlock is how many seqs one database lease hands to Redis.
	LeaseBlock int64 `koanf:"lease_block"`
}

// Msg configures message validation.
type Msg struct {
	// MaxBodyBytes caps a message's content, in bytes.
	MaxBodyBytes int `koanf:"max_body_bytes"`
	// RevokeWindow is how long a sender may recall its message.
	RevokeWindow time.Duration `koanf:"revoke_window"`
	// EditWindow is how long after sending a sender may edit its text
	// message; 0 turns the time limit off (docs/actions.md).
	EditWindow time.Duration `koanf:"edit_window"`
	// MaxReactionsPerUser caps the distinct emojis one user may react with
	// on one message.
	MaxReactionsPerUser int `koanf:"max_reactions_per_user"`
	// ReactionEmojis, when not empty, is the only emojis reactions may use;
	// empty allows any single emoji (one grapheme cluster).
	ReactionEmojis []string `koanf:"reaction_emojis"`
}

// Cluster configures membership and cross-instance routing
// (docs/cluster.md). One process is a cluster of one; the embedded default
// always is.
type Cluster struct {
	// InstanceID names this process among the instances sharing one Redis:
	// consumer name in every stream group, presence member, inbox. Unique
	// per live process; empty means host name + "-" + HTTP port (stable
	// across restarts of that process).
	InstanceID string `koanf:"instance_id"`
	// HeartbeatInterval is how often the instance renews its membership.
	HeartbeatInterval time.Duration `koanf:"heartbeat_interval"`
	// InstanceTTL is how long a membership record outlives its last
	// heartbeat: a crashed instance stops receiving routed pushes, and its
	// presence entries stop counting, this long after it died.
	InstanceTTL time.Duration `koanf:"instance_ttl"`
	// Bus carries pushes and session events between instances: redis
	// (Redis Streams through watermill-redisstream) or nats (NATS JetStream
	// through watermill-nats). The embedded default uses an in-process
	// channel whatever this says.
	Bus string `koanf:"bus"`
	// NATSURL is the NATS server when Bus is nats.
	NATSURL string `koanf:"nats_url"`
	// InboxMaxAge drops an envelope older than this on arrival (counted);
	// resend on connect and pull recover what it carried.
	InboxMaxAge time.Duration `koanf:"inbox_max_age"`
	// InboxMaxLen caps each inbox stream (approximate, trimmed on publish).
	InboxMaxLen int64 `koanf:"inbox_max_len"`
	// DrainDelay keeps serving after SIGTERM, with /readyz answering 503,
	// this long before the listener closes and connections get close 1012,
	// so a load balancer takes the instance out first.
	DrainDelay time.Duration `koanf:"drain_delay"`
}

// Cluster buses (cluster.bus).
const (
	BusRedis = "redis"
	BusNATS  = "nats"
)

// Push configures asynchronous pushes of the synchronous path.
type Push struct {
	// QueueSize bounds the queue of pushes waiting to be sent; when full a
	// push is dropped and counted (clients pull).
	QueueSize int `koanf:"queue_size"`
	// Workers is how many goroutines drain it.
	Workers int `koanf:"workers"`

	// The fields below configure the built-in push to phones and browsers
	// (docs/push.md); the two above are the synchronous path's queue.

	// Enabled turns on the built-in push: the device routes, and the push
	// stages once a provider below is configured (the embedded mode always
	// has Web Push, with a generated VAPID pair).
	Enabled bool `koanf:"enabled"`
	// GroupWindow: a group conversation notifies a recipient at most once
	// per window; the messages inside it are collapsed into that one.
	GroupWindow time.Duration `koanf:"group_window"`
	// Preview is what a notification shows of a message: text (its start),
	// sender_only (the sender's name only) or none (a generic line).
	Preview string `koanf:"preview"`
	// PreviewChars cuts the text preview (Unicode characters).
	PreviewChars int `koanf:"preview_chars"`
	// MaxDevicesPerUser caps a user's registered devices; registering one
	// more forgets the least recently registered.
	MaxDevicesPerUser int `koanf:"max_devices_per_user"`
	// ResolveBatch is the most saved messages the resolve stage reads at
	// once.
	ResolveBatch int `koanf:"resolve_batch"`
	// MaxAttempts is how many sends a notification gets before it is
	// dead-lettered; RetryBackoff doubles per attempt up to
	// RetryBackoffMax. A provider's Retry-After, when longer, wins (capped
	// by RetryAfterMax).
	MaxAttempts     int           `koanf:"max_attempts"`
	RetryBackoff    time.Duration `koanf:"retry_backoff"`
	RetryBackoffMax time.Duration `koanf:"retry_backoff_max"`
	RetryAfterMax   time.Duration `koanf:"retry_after_max"`
	// Timeout bounds one request to a provider.
	Timeout time.Duration `koanf:"timeout"`
	// DeadMaxLen caps the dead-letter stream of notifications.
	DeadMaxLen int64       `koanf:"dead_max_len"`
	FCM        PushFCM     `koanf:"fcm"`
	APNs       PushAPNs    `koanf:"apns"`
	WebPush    PushWebPush `koanf:"webpush"`
}

// PushFCM configures Firebase Cloud Messaging (HTTP v1 API).
type PushFCM struct {
	// CredentialsFile is the service account's JSON key (Firebase console,
	// Project settings, Service accounts, "Generate new private key");
	// empty turns FCM off.
	CredentialsFile string `koanf:"credentials_file"`
	// ProjectID overrides the key's project_id.
	ProjectID string `koanf:"project_id"`
	// Endpoint is the API's base URL (tests point it at a local receiver).
	Endpoint string `koanf:"endpoint"`
	// Concurrency is how many requests to FCM are in flight at once.
	Concurrency int `koanf:"concurrency"`
}

// PushAPNs configures the Apple Push Notification service, token auth.
type PushAPNs struct {
	// KeyFile is the .p8 signing key (Apple Developer, Keys, with the APNs
	// service enabled); empty turns APNs off. KeyID is its 10-character
	// ID, TeamID the account's team ID, Topic the app's bundle ID.
	KeyFile string `koanf:"key_file"`
	KeyID   string `koanf:"key_id"`
	TeamID  string `koanf:"team_id"`
	Topic   string `koanf:"topic"`
	// Production sends to the production service; false to the sandbox
	// (development builds).
	Production bool `koanf:"production"`
	// Endpoint overrides the service's URL (tests point it at a local
	// HTTP/2 receiver).
	Endpoint    string `koanf:"endpoint"`
	Concurrency int    `koanf:"concurrency"`
}

// PushWebPush configures Web Push with VAPID (RFC 8030, 8291, 8292).
type PushWebPush struct {
	// VAPIDPublicKey and VAPIDPrivateKey are the application server's P-256
	// key pair, base64url; both empty turns Web Push off, except in the
	// embedded mode, which generates a pair and keeps it in its data
	// directory. Subject is a mailto: or https: contact for the push
	// services.
	VAPIDPublicKey  string `koanf:"vapid_public_key"`
	VAPIDPrivateKey string `koanf:"vapid_private_key"`
	Subject         string `koanf:"subject"`
	// AllowInsecureEndpoints accepts http:// subscription endpoints: for
	// tests only (nexo config check warns).
	AllowInsecureEndpoints bool `koanf:"allow_insecure_endpoints"`
	// TTL is how long a push service keeps an undelivered notification.
	TTL         time.Duration `koanf:"ttl"`
	Concurrency int           `koanf:"concurrency"`
}

// Admin configures the admin endpoints.
type Admin struct {
	// Token guards /admin/*; empty disables them.
	Token string `koanf:"token"`
}

// Group configures group chat: management rules, the member cache, the
// management lock and the fanout strategy (docs/groups.md).
type Group struct {
	// MinCreateMembers is the least number of distinct users (creator
	// included) a new group needs; two people use single chat.
	MinCreateMembers int `koanf:"min_create_members"`
	// InvitePermission is who may invite: "members" (any member) or
	// "admins" (owner and admins), for groups without their own
	// invite_permission.
	InvitePermission string `koanf:"invite_permission"`
	// MaxIDsPerRequest caps member_ids / user_ids of one request.
	MaxIDsPerRequest int `koanf:"max_ids_per_request"`
	// MaxMembers caps a group's active members (creation, joins and
	// invitations beyond it are refused).
	MaxMembers int `koanf:"max_members"`
	// MemberCacheTTL is the lifetime of the Redis member cache
	// group:members:{group_id}; every membership change invalidates it.
	MemberCacheTTL time.Duration `koanf:"member_cache_ttl"`
	// LocalCacheTTL bounds how long a process keeps a decoded member list;
	// each use still checks the Redis version, so a change is seen at once.
	LocalCacheTTL time.Duration `koanf:"local_cache_ttl"`
	// LocalCacheSize is how many groups a process keeps decoded.
	LocalCacheSize int `koanf:"local_cache_size"`
	// LockTTL is how long a management operation may hold its group's lock.
	LockTTL time.Duration `koanf:"lock_ttl"`
	// LockWait is how long an operation waits for the lock before server_busy.
	LockWait time.Duration `koanf:"lock_wait"`
	// Push is the fanout strategy.
	Push GroupPush `koanf:"push"`
}

// GroupPush chooses how a group message reaches online members
// (docs/groups.md).
type GroupPush struct {
	// Mode is push (message body, 2001), notify (2102, clients pull), none,
	// or auto (thresholds below).
	Mode string `koanf:"mode"`
	// GroupSizeThreshold: auto picks notify at this many members.
	GroupSizeThreshold int `koanf:"group_size_threshold"`
	// OnlineUserThreshold: auto picks notify at this many online members.
	OnlineUserThreshold int `koanf:"online_user_threshold"`
	// NotifyMaxOnlineUser: auto pushes nothing at this many online members.
	NotifyMaxOnlineUser int `koanf:"notify_max_online_user"`
	// HugeGroupNoNotifySize: auto pushes nothing at this many members.
	HugeGroupNoNotifySize int `koanf:"huge_group_no_notify_size"`
	// Workers bounds the goroutines that push one message's frames.
	Workers int `koanf:"workers"`
}

// Sync configures delivered/read cursors and receipts, offline resend and
// recall (docs/sync.md).
type Sync struct {
	// CursorFlushInterval is the coalescing window of cursor writes: ACKs of
	// one member and conversation within it cost one row of one upsert.
	CursorFlushInterval time.Duration `koanf:"cursor_flush_interval"`
	// ResendSingleMax and ResendGroupMax cap the messages pushed on connect
	// (single chat and group chat, in total over all conversations); the
	// rest is announced with 2102 {conversation_id, max_seq} for a pull.
	ResendSingleMax int `koanf:"resend_single_max"`
	ResendGroupMax  int `koanf:"resend_group_max"`
	// ResendLockTTL is the per-user-and-platform Redis lock that suppresses
	// repeated resends in a reconnect storm; 0 disables it.
	ResendLockTTL time.Duration `koanf:"resend_lock_ttl"`
	// ResendConcurrency bounds the resends one process runs at once (each
	// costs two queries).
	ResendConcurrency int `koanf:"resend_concurrency"`
	// GroupReceiptMaxMembers: groups with more active members send no
	// per-reader read receipts (2101); 0 (the default) turns them off and
	// leaves the read counts (2104). Set it (e.g. 200) only for clients that
	// predate read counts.
	GroupReceiptMaxMembers int `koanf:"group_receipt_max_members"`
	// RevokeWait is how long a recall of an accepted but not yet saved
	// message waits for the save before answering server_busy (the recall
	// still applies when the message is saved).
	RevokeWait time.Duration `koanf:"revoke_wait"`
	// RecvOptCacheTTL bounds how long a process keeps a user's single-chat
	// recv_msg_opt (no push) settings for the deliver stage, which reads them
	// for every message without a database query. A change made through
	// this process applies at once; one made through another process within
	// this long.
	RecvOptCacheTTL time.Duration `koanf:"recv_opt_cache_ttl"`
	// ReadCountInterval is the coalescing window of the read-count updates
	// a group message's sender gets (docs/sync.md, "Read counts"): at most
	// one per conversation per interval, across all instances.
	ReadCountInterval time.Duration `koanf:"read_count_interval"`
}

// Metrics configures how the operator routes (/metrics) are served
// (docs/security.md). Outside the embedded mode, with neither Addr nor
// Token, they are not served at all.
type Metrics struct {
	// Addr, when set (e.g. 127.0.0.1:9090), serves them on a listener of
	// their own and no longer on http.addr.
	Addr string `koanf:"addr"`
	// Token, when set, is required as "Authorization: Bearer <token>".
	Token string `koanf:"token"`
}

// Limits configures the abuse limits kept in Redis and shared by every
// instance (docs/security.md). A Rate with rate 0 is off.
type Limits struct {
	// LoginIP counts every login attempt from one client IP.
	LoginIP Rate `koanf:"login_ip"`
	// LoginAccount counts the login attempts on one user_id since its last
	// successful login (a success clears it).
	LoginAccount Rate `koanf:"login_account"`
	// RegisterIP counts the registrations from one client IP.
	RegisterIP Rate `koanf:"register_ip"`
	// LoginBackoff makes LoginIP and LoginAccount back off exponentially
	// on failed logins.
	LoginBackoff Backoff `koanf:"login_backoff"`
	// DeadLetters refuses for a while the sends of a user whose messages
	// keep being dead-lettered.
	DeadLetters DeadLetters `koanf:"dead_letters"`
	// Search counts one user's searches (messages, users, groups), on
	// every instance.
	Search Rate `koanf:"search"`
	// GroupInvite counts the users one user adds to groups through
	// /group/invite and /group/create (each added user is one event; more
	// than burst at once is refused). The server API is not counted.
	GroupInvite Rate `koanf:"group_invite"`
	// GroupAdded counts how often one user is added to groups by someone
	// else (/group/invite, /group/create member_ids), whoever adds them:
	// past it, adding that user is too_many_requests. Only adds that would
	// happen count (not users already members, nor adds their
	// group_invites refuses). The server API is not counted.
	GroupAdded Rate `koanf:"group_added"`
	// Export counts one user's data exports (GET /user/export); the
	// server API's exports are not counted.
	Export Rate `koanf:"export"`
	// Report counts one user's message reports (POST /msg/report, WS
	// 1113), on every instance. A repeated report of the same message
	// counts too.
	Report Rate `koanf:"report"`
}

// DeadLetters is the repeat-offender limit: Count dead-lettered messages
// of one sender within about Window (a GCRA: Count at once, then one more
// per Window/Count) block the sender's sends for Block, on every instance.
type DeadLetters struct {
	// Count is how many dead letters block; 0 turns the limit off.
	Count int `koanf:"count"`
	// Window is the period the Count is measured over.
	Window time.Duration `koanf:"window"`
	// Block is how long a blocked sender's sends are refused
	// (too_many_requests with retry_after_ms).
	Block time.Duration `koanf:"block"`
}

// Backoff doubles a limit's wait with every further failure: past the
// limit's burst of failures, the next failure waits twice the limit's own
// wait (period/rate), the next four times, and so on up to Max.
type Backoff struct {
	// Max caps the wait; 0 turns the backoff off.
	Max time.Duration `koanf:"max"`
	// Window is how long one failure is remembered: each failure adds
	// Window to the subject's count, which drains in real time (n failures
	// are forgotten n×Window after the last one). 0 turns the backoff off.
	Window time.Duration `koanf:"window"`
}

// Rate is a limit of Rate events per Period with bursts of Burst (GCRA:
// after the burst, one event per Period/Rate).
type Rate struct {
	Rate   int           `koanf:"rate"`
	Period time.Duration `koanf:"period"`
	Burst  int           `koanf:"burst"`
}

// Group push modes (group.push.mode) and invite permissions
// (group.invite_permission).
const (
	GroupPushAuto   = "auto"
	GroupPushPush   = "push"
	GroupPushNotify = "notify"
	GroupPushNone   = "none"

	InviteByMembers = "members"
	InviteByAdmins  = "admins"
)

// Embedded reports whether the configuration selects the embedded default
// (SQLite file and in-process Redis): neither a DSN nor a Redis address set.
func (c *Config) Embedded() bool { return c.MySQL.DSN == "" && len(c.Redis.Addresses()) == 0 }

// EmbeddedShards is streams.shards in the embedded default when the
// configuration does not set it. The embedded Redis (miniredis) wakes every
// blocked XREADGROUP on every command, and each shard has two blocked
// readers; fewer shards also make fuller batches for the one SQLite writer.
// Measured at 1,000 msg/s offered (docs/bench/README.md, the embedded
// default): 2 shards cost 0.82 CPU-s per 1,000 messages against 1.01 with 8.
const EmbeddedShards = 2

// EmbeddedIdempotencyTTL is two_phase.idempotency_ttl in the embedded
// default when the configuration does not set it (the smallest value
// allowed). Every message leaves one idempotency record in Redis for that
// long, and the embedded Redis walks and sorts all its keys to expire any
// (store.StartEmbeddedRedis): with 24 h, 1,000 msg/s piled up 120,000 keys
// in two minutes and one walk then took 0.1 s. A retry of a saved message
// is answered from the database anyway (it is looked up before the
// accept), and the embedded Redis forgets everything at each restart.
const EmbeddedIdempotencyTTL = time.Minute

// applyEmbeddedDefaults sets the defaults that differ in the embedded
// default (Embedded) for the keys that set reports unset.
func (c *Config) applyEmbeddedDefaults(set func(key string) bool) {
	if !c.Embedded() {
		return
	}
	if !set("streams.shards") {
		c.Streams.Shards = EmbeddedShards
	}
	if !set("two_phase.idempotency_ttl") {
		c.TwoPhase.IdempotencyTTL = EmbeddedIdempotencyTTL
	}
	// Retries lean on the database's duplicate check there (the minute
	// above, and a Redis that forgets at each restart), and the database
	// is a local file: the check is always waited for.
	if !set("two_phase.duplicate_check_wait") {
		c.TwoPhase.DuplicateCheckWait = 0
	}
}

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		HTTP: HTTP{Addr: ":8080", ShutdownTimeout: 10 * time.Second, MaxBodyBytes: 1 << 20,
			ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, MaxConns: 50000, MaxConnsPerIP: 1000,
			CORS: CORS{
				AllowedMethods: []string{"GET", "POST", "PUT", "DELETE", "OPTIONS"},
				AllowedHeaders: []string{"Authorization", "Content-Type", "token", "operationID"},
				MaxAge:         10 * time.Minute,
			}},
		MySQL:  MySQL{MaxOpenConns: 32, MaxIdleConns: 32, ConnMaxLifetime: time.Hour},
		SQLite: SQLite{Path: "./data/nexo.db"},
		Redis:  Redis{Mode: RedisStandalone, PoolSize: 64, KeyPrefix: "nexo", MemoryDegradedRatio: 0.9},
		JWT:    JWT{TTL: 24 * time.Hour, Issuer: "nexo"},
		Auth: Auth{BcryptCost: 10, HashWait: 2 * time.Second, ExternalJWT: ExternalJWT{
			JWKSRefresh: 15 * time.Minute, JWKSMinRefresh: 10 * time.Second,
			UserIDClaim: "sub", PlatformClaim: "platform_id", Leeway: 30 * time.Second,
		}},
		Log: Log{Level: "info", Format: "text", Access: true},
		WS: WS{
			ReadLimit: 64 << 10, WriteTimeout: 10 * time.Second,
			PingInterval: 25 * time.Second, PongWait: 60 * time.Second,
			SendQueue: 256, HighWater: 192, CloseUnwritableAfter: 3 * time.Second,
			LoginPolicy: "single_per_platform", RateLimit: 100, RateBurst: 200,
			PresenceTTL: 60 * time.Second,
		},
		TwoPhase: TwoPhase{Enabled: true, DeliverBeforeSaved: false, FailOpen: true, IdempotencyTTL: 24 * time.Hour,
			AcceptReplicasTimeout: 100 * time.Millisecond, DuplicateCheckWait: 10 * time.Millisecond},
		Streams: Streams{
			Shards: 8, ReadCount: 256, Block: 2 * time.Second,
			ClaimMinIdle: 5 * time.Second, TrimInterval: 5 * time.Second,
			DeadMaxLen: 10000, DeadMaxAge: 7 * 24 * time.Hour, DeadMaxBodyBytes: 1024,
			DeliverRetryBackoff: 100 * time.Millisecond, DeliverRetryBackoffMax: 5 * time.Second,
			Names: DefaultStreamNames(),
		},
		Save: Save{
			BatchSize: 256, BatchWait: 0, MaxAttempts: 8,
			RetryBackoff: 100 * time.Millisecond, RetryBackoffMax: 5 * time.Second,
		},
		Seq: Seq{LeaseBlock: 100},
		Msg: Msg{MaxBodyBytes: 51200, RevokeWindow: 2 * time.Minute, EditWindow: 24 * time.Hour, MaxReactionsPerUser: 20, ReactionEmojis: []string{}},
		Push: Push{QueueSize: 65536, Workers: 4, Enabled: true, GroupWindow: 2 * time.Second, Preview: "text", PreviewChars: 100,
			MaxDevicesPerUser: 20, ResolveBatch: 200, MaxAttempts: 8, RetryBackoff: time.Second, RetryBackoffMax: 5 * time.Minute,
			RetryAfterMax: 10 * time.Minute, Timeout: 10 * time.Second, DeadMaxLen: 10000,
			FCM:     PushFCM{Endpoint: "https://fcm.googleapis.com", Concurrency: 16},
			APNs:    PushAPNs{Concurrency: 16},
			WebPush: PushWebPush{Subject: "mailto:admin@localhost", TTL: 24 * time.Hour, Concurrency: 16}},
		Group: Group{
			MinCreateMembers: 3, InvitePermission: InviteByMembers, MaxIDsPerRequest: 2000, MaxMembers: 10_000,
			MemberCacheTTL: 5 * time.Minute, LocalCacheTTL: 30 * time.Second, LocalCacheSize: 10000,
			LockTTL: 10 * time.Second, LockWait: 5 * time.Second,
			Push: GroupPush{
				Mode: GroupPushAuto, GroupSizeThreshold: 2000, OnlineUserThreshold: 500,
				NotifyMaxOnlineUser: 2000, HugeGroupNoNotifySize: 10000, Workers: 8,
			},
		},
		Cluster: Cluster{
			HeartbeatInterval: time.Second, InstanceTTL: 3 * time.Second, Bus: BusRedis,
			NATSURL: "nats://127.0.0.1:4222", InboxMaxAge: 30 * time.Second, InboxMaxLen: 100000,
		},
		Sync: Sync{
			CursorFlushInterval: 50 * time.Millisecond, ResendSingleMax: 200, ResendGroupMax: 200,
			ResendLockTTL: 5 * time.Second, ResendConcurrency: 16, GroupReceiptMaxMembers: 0, ReadCountInterval: time.Second,
			RevokeWait: 3 * time.Second, RecvOptCacheTTL: 5 * time.Second,
		},
		Webhooks: Webhooks{
			Timeout: 5 * time.Second, MaxAttempts: 8, RetryBackoff: time.Second, RetryBackoffMax: 5 * time.Minute, Workers: 16, BatchSize: 1,
			DeadMaxLen: 100000, DeadMaxBodyBytes: 64 << 10,
			BeforeSend:  BeforeSend{Timeout: 2 * time.Second, OnError: OnErrorAllow},
			OfflinePush: OfflinePush{BatchWait: 500 * time.Millisecond, Preview: "text", PreviewChars: 100},
		},
		Limits: Limits{
			LoginIP:      Rate{Rate: 30, Period: time.Minute, Burst: 30},
			LoginAccount: Rate{Rate: 5, Period: time.Minute, Burst: 5},
			LoginBackoff: Backoff{Max: 15 * time.Minute, Window: 10 * time.Minute},
			DeadLetters:  DeadLetters{Count: 10, Window: 10 * time.Minute, Block: 10 * time.Minute},
			RegisterIP:   Rate{Rate: 20, Period: time.Hour, Burst: 20},
			GroupInvite:  Rate{Rate: 500, Period: time.Hour, Burst: 500},
			GroupAdded:   Rate{Rate: 30, Period: time.Hour, Burst: 30},
			Search:       Rate{Rate: 60, Period: time.Minute, Burst: 20},
			Export:       Rate{Rate: 3, Period: time.Hour, Burst: 3},
			Report:       Rate{Rate: 20, Period: time.Hour, Burst: 10},
		},
		Retention:  Retention{CleanInterval: time.Minute, CleanBatch: 50, CleanPause: 50 * time.Millisecond, CleanPauseRatio: 3},
		Search:     Search{Enabled: true, Timeout: 2 * time.Second, IndexBatch: 500, IndexWait: 200 * time.Millisecond},
		Moderation: Moderation{Action: ModerationRefuse},
		Objects: Objects{
			S3:             ObjectsS3{Region: "us-east-1", UseSSL: true},
			MaxDirectBytes: 32 << 20, MaxBytes: 2 << 30, PartSize: 8 << 20,
			MaxImageBytes: 50 << 20, MaxAudioBytes: 200 << 20, MaxVideoBytes: 2 << 30,
			MaxImagePixels: 50_000_000, ThumbnailPx: 320, UserQuotaBytes: 5 << 30,
			URLTTL: 15 * time.Minute, OrphanTTL: 24 * time.Hour, CleanInterval: 10 * time.Minute,
			ThumbWorkers: 2,
			Upload:       Rate{Rate: 60, Period: time.Minute, Burst: 20},
		},
		Memory: Memory{IdleRelease: 15 * time.Second, IdleAllocBytes: 8 << 20},
	}
}

// Object storage backends (objects.backend).
const (
	ObjectsBackendLocal = "local"
	ObjectsBackendS3    = "s3"
)

// Objects configures uploads, their storage and their lifecycle
// (docs/media.md).
type Objects struct {
	// Backend is "local" (a directory) or "s3" (any S3-compatible
	// service). Empty: local in the embedded default; elsewhere uploads are
	// off (the object routes are not mounted) until a backend is chosen.
	Backend string       `koanf:"backend"`
	Local   ObjectsLocal `koanf:"local"`
	S3      ObjectsS3    `koanf:"s3"`
	// PublicURL prefixes the Nexo-signed URLs of the local backend (e.g.
	// https://chat.example.com); empty: the URLs are paths on this server.
	PublicURL string `koanf:"public_url"`
	// MaxDirectBytes caps POST /object/upload (bytes).
	MaxDirectBytes int64 `koanf:"max_direct_bytes"`
	// MaxBytes caps any object (bytes), multipart ones included.
	MaxBytes int64 `koanf:"max_bytes"`
	// PartSize is the size of each multipart part but the last (bytes,
	// >= 5 MiB as S3 requires).
	PartSize int64 `koanf:"part_size"`
	// MaxImageBytes, MaxAudioBytes, MaxVideoBytes cap objects of each
	// sniffed family (bytes; 0: MaxBytes).
	MaxImageBytes int64 `koanf:"max_image_bytes"`
	MaxAudioBytes int64 `koanf:"max_audio_bytes"`
	MaxVideoBytes int64 `koanf:"max_video_bytes"`
	// MaxImagePixels is the decompression-bomb guard: an image whose
	// header declares more pixels (width × height) is refused.
	MaxImagePixels int64 `koanf:"max_image_pixels"`
	// ThumbnailPx bounds a thumbnail's longer side (pixels).
	ThumbnailPx int `koanf:"thumbnail_px"`
	// ThumbWorkers is how many thumbnails an instance makes at once.
	ThumbWorkers int `koanf:"thumb_workers"`
	// UserQuotaBytes caps the bytes one user's objects take (0: no cap).
	UserQuotaBytes int64 `koanf:"user_quota_bytes"`
	// URLTTL is how long a signed object URL (download or part upload) works.
	URLTTL time.Duration `koanf:"url_ttl"`
	// OrphanTTL: objects no message references after this, and multipart
	// uploads not completed within it, are deleted.
	OrphanTTL time.Duration `koanf:"orphan_ttl"`
	// CleanInterval is how often the cleaner (one instance at a time) runs.
	CleanInterval time.Duration `koanf:"clean_interval"`
	// Upload counts one user's uploads (direct uploads and multipart
	// initiations), on every instance.
	Upload Rate `koanf:"upload"`
}

// ObjectsLocal is the local backend: a directory.
type ObjectsLocal struct {
	// Dir holds the objects (created if missing). Empty in the embedded
	// default: "objects" next to sqlite.path (./data/objects).
	Dir string `koanf:"dir"`
	// Shared says Dir is a mount every instance shares (NFS, CephFS);
	// required for the local backend outside the embedded default.
	Shared bool `koanf:"shared"`
}

// ObjectsS3 is the S3 backend (AWS S3, MinIO, SeaweedFS, Ceph, R2...).
type ObjectsS3 struct {
	// Endpoint is host[:port] without a scheme (e.g. s3.amazonaws.com,
	// minio.internal:9000).
	Endpoint string `koanf:"endpoint"`
	Region   string `koanf:"region"`
	Bucket   string `koanf:"bucket"`
	// UseSSL selects https.
	UseSSL bool `koanf:"use_ssl"`
	// PathStyle addresses the bucket in the path (MinIO, most
	// self-hosted services) instead of the host name.
	PathStyle bool   `koanf:"path_style"`
	AccessKey string `koanf:"access_key"`
	SecretKey string `koanf:"secret_key"`
	// SSE is server-side encryption: "" (none) or "s3" (SSE-S3, AES256).
	SSE string `koanf:"sse"`
	// CreateBucket makes the bucket at start when missing.
	CreateBucket bool `koanf:"create_bucket"`
}

// ResolveObjects fixes the object backend and the local directory in
// effect into the configuration (call it while Embedded still tells the
// mode): Backend "local" and Local.Dir next to the SQLite file in the
// embedded default when they are empty.
func (c *Config) ResolveObjects() {
	c.Objects.Backend = c.ObjectsBackend()
	if c.Objects.Backend == ObjectsBackendLocal && c.Objects.Local.Dir == "" {
		c.Objects.Local.Dir = filepath.Join(filepath.Dir(c.SQLite.Path), "objects")
	}
}

// ObjectsBackend returns the backend in effect: Backend, or "local" in the
// embedded default when it is empty; "" means uploads are off.
func (c *Config) ObjectsBackend() string {
	if c.Objects.Backend == "" && c.Embedded() {
		return ObjectsBackendLocal
	}
	return c.Objects.Backend
}
