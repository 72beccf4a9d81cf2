// Package configs holds Nexo's typed configuration: its defaults, how it is
// loaded (a YAML file, then environment overrides), and its validation. It is
// the only package that reads configuration files or the environment.
package configs

import "time"

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
}

// HTTP configures the listener shared by the HTTP API and WebSocket.
type HTTP struct {
	// Addr is host:port to listen on.
	Addr string `koanf:"addr"`
	// ShutdownTimeout bounds graceful shutdown of the listener.
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"`
	// MaxBodyBytes caps an HTTP request body.
	MaxBodyBytes int `koanf:"max_body_bytes"`
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

// Redis configures the Redis client. An empty Addr (with an empty MySQL DSN)
// selects the embedded in-process server.
type Redis struct {
	Addr     string `koanf:"addr"`
	Password string `koanf:"password"`
	DB       int    `koanf:"db"`
	PoolSize int    `koanf:"pool_size"`
	// KeyPrefix is prepended to every key Nexo writes, so several deployments
	// (or tests) can share one Redis.
	KeyPrefix string `koanf:"key_prefix"`
}

// JWT configures token signing (HS256).
type JWT struct {
	// Secret must be at least 32 bytes; only the embedded default may leave it
	// empty, and then a random one is generated at start.
	Secret string        `koanf:"secret"`
	TTL    time.Duration `koanf:"ttl"`
	Issuer string        `koanf:"issuer"`
}

// Auth configures password hashing.
type Auth struct {
	// BcryptCost is the bcrypt work factor (4–31).
	BcryptCost int `koanf:"bcrypt_cost"`
}

// Log configures log/slog.
type Log struct {
	Level  string `koanf:"level"`
	Format string `koanf:"format"`
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
	// RateLimit is requests per second per user (token bucket); 0 disables.
	RateLimit float64 `koanf:"rate_limit"`
	// RateBurst is the bucket size.
	RateBurst int `koanf:"rate_burst"`
	// AllowedOrigins lists Origin values allowed to upgrade; empty allows same
	// host only, "*" allows any.
	AllowedOrigins []string `koanf:"allowed_origins"`
	// PresenceTTL is the TTL of online:{user_id}, refreshed by heartbeats.
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
}

// Save configures the save stage.
type Save struct {
	// BatchSize is the most rows one INSERT writes.
	BatchSize int `koanf:"batch_size"`
	// BatchWait is how long a batch waits to fill.
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
}

// Push configures asynchronous pushes of the synchronous path.
type Push struct {
	// QueueSize bounds the queue of pushes waiting to be sent; when full a
	// push is dropped and counted (clients pull).
	QueueSize int `koanf:"queue_size"`
	// Workers is how many goroutines drain it.
	Workers int `koanf:"workers"`
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
	// "admins" (owner and admins).
	InvitePermission string `koanf:"invite_permission"`
	// MaxIDsPerRequest caps member_ids / user_ids of one request.
	MaxIDsPerRequest int `koanf:"max_ids_per_request"`
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

// GroupPush chooses how a group message reaches online members (seed
// design 001 §5.2).
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
	// GroupReceiptMaxMembers: groups with more active members send no read
	// receipts; 0 turns group read receipts off.
	GroupReceiptMaxMembers int `koanf:"group_receipt_max_members"`
	// RevokeWait is how long a recall of an accepted but not yet saved
	// message waits for the save before answering server_busy (the recall
	// still applies when the message is saved).
	RevokeWait time.Duration `koanf:"revoke_wait"`
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
func (c *Config) Embedded() bool { return c.MySQL.DSN == "" && c.Redis.Addr == "" }

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		HTTP:   HTTP{Addr: ":8080", ShutdownTimeout: 10 * time.Second, MaxBodyBytes: 1 << 20},
		MySQL:  MySQL{MaxOpenConns: 32, MaxIdleConns: 16, ConnMaxLifetime: time.Hour},
		SQLite: SQLite{Path: "./data/nexo.db"},
		Redis:  Redis{PoolSize: 64, KeyPrefix: "nexo"},
		JWT:    JWT{TTL: 24 * time.Hour, Issuer: "nexo"},
		Auth:   Auth{BcryptCost: 10},
		Log:    Log{Level: "info", Format: "text"},
		WS: WS{
			ReadLimit: 64 << 10, WriteTimeout: 10 * time.Second,
			PingInterval: 25 * time.Second, PongWait: 60 * time.Second,
			SendQueue: 256, HighWater: 192, CloseUnwritableAfter: 3 * time.Second,
			LoginPolicy: "single_per_platform", RateLimit: 100, RateBurst: 200,
			PresenceTTL: 60 * time.Second,
		},
		TwoPhase: TwoPhase{Enabled: true, DeliverBeforeSaved: false, FailOpen: true, IdempotencyTTL: 24 * time.Hour},
		Streams: Streams{
			Shards: 8, ReadCount: 256, Block: 2 * time.Second,
			ClaimMinIdle: 5 * time.Second, TrimInterval: 5 * time.Second,
		},
		Save: Save{
			BatchSize: 256, BatchWait: 2 * time.Millisecond, MaxAttempts: 8,
			RetryBackoff: 100 * time.Millisecond, RetryBackoffMax: 5 * time.Second,
		},
		Seq:  Seq{LeaseBlock: 100},
		Msg:  Msg{MaxBodyBytes: 51200, RevokeWindow: 2 * time.Minute},
		Push: Push{QueueSize: 65536, Workers: 4},
		Group: Group{
			MinCreateMembers: 3, InvitePermission: InviteByMembers, MaxIDsPerRequest: 2000,
			MemberCacheTTL: 5 * time.Minute, LocalCacheTTL: 30 * time.Second, LocalCacheSize: 10000,
			LockTTL: 10 * time.Second, LockWait: 5 * time.Second,
			Push: GroupPush{
				Mode: GroupPushAuto, GroupSizeThreshold: 2000, OnlineUserThreshold: 500,
				NotifyMaxOnlineUser: 2000, HugeGroupNoNotifySize: 10000, Workers: 8,
			},
		},
		Sync: Sync{
			CursorFlushInterval: 50 * time.Millisecond, ResendSingleMax: 200, ResendGroupMax: 200,
			ResendLockTTL: 5 * time.Second, ResendConcurrency: 16, GroupReceiptMaxMembers: 200,
			RevokeWait: 3 * time.Second,
		},
	}
}
