package configs

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// MinJWTSecretLen is the shortest accepted JWT secret, in bytes.
const MinJWTSecretLen = 32

// Login policies (ws.login_policy).
const (
	LoginMulti             = "multi"
	LoginSinglePerPlatform = "single_per_platform"
	LoginSingle            = "single"
)

// Validate checks every value; the first problem is returned as an error that
// names the key, its environment variable and the allowed values.
func (c *Config) Validate() error {
	checks := []struct {
		ok       bool
		key, msg string
	}{
		{validAddr(c.HTTP.Addr), "http.addr", fmt.Sprintf("%q is not host:port (e.g. :8080)", c.HTTP.Addr)},
		{c.HTTP.ShutdownTimeout > 0, "http.shutdown_timeout", "must be > 0"},
		{c.HTTP.MaxBodyBytes >= 1024, "http.max_body_bytes", "must be >= 1024"},
		{(c.MySQL.DSN == "") == (c.Redis.Addr == ""), "mysql.dsn", "set both mysql.dsn and redis.addr, or neither (the embedded default)"},
		{c.MySQL.MaxOpenConns >= 1, "mysql.max_open_conns", "must be >= 1"},
		{c.MySQL.MaxIdleConns >= 0, "mysql.max_idle_conns", "must be >= 0"},
		{c.SQLite.Path != "", "sqlite.path", "must not be empty"},
		{c.Redis.Addr == "" || validAddr(c.Redis.Addr), "redis.addr", fmt.Sprintf("%q is not host:port", c.Redis.Addr)},
		{c.Redis.PoolSize >= 1, "redis.pool_size", "must be >= 1"},
		{c.Redis.DB >= 0 && c.Redis.DB <= 15, "redis.db", "must be 0–15"},
		{c.Redis.KeyPrefix != "" && !strings.ContainsAny(c.Redis.KeyPrefix, "{} "), "redis.key_prefix", "must be non-empty, without braces or spaces"},
		{c.JWT.Secret == "" && c.Embedded() || len(c.JWT.Secret) >= MinJWTSecretLen, "jwt.secret",
			fmt.Sprintf("must be at least %d bytes (only the embedded default may leave it empty)", MinJWTSecretLen)},
		{c.JWT.TTL >= time.Minute, "jwt.ttl", "must be >= 1m"},
		{c.Auth.BcryptCost >= 4 && c.Auth.BcryptCost <= 31, "auth.bcrypt_cost", "must be 4–31"},
		{oneOf(c.Log.Level, "debug", "info", "warn", "error"), "log.level", "allowed: debug, info, warn, error"},
		{oneOf(c.Log.Format, "text", "json"), "log.format", "allowed: text, json"},
		{c.WS.ReadLimit >= 1024, "ws.read_limit", "must be >= 1024 bytes"},
		{c.WS.WriteTimeout > 0, "ws.write_timeout", "must be > 0"},
		{c.WS.PingInterval > 0, "ws.ping_interval", "must be > 0"},
		{c.WS.PongWait > c.WS.PingInterval, "ws.pong_wait", "must be greater than ws.ping_interval"},
		{c.WS.SendQueue >= 8, "ws.send_queue", "must be >= 8"},
		{c.WS.HighWater >= 1 && c.WS.HighWater <= c.WS.SendQueue, "ws.high_water", "must be 1..ws.send_queue"},
		{c.WS.CloseUnwritableAfter > 0, "ws.close_unwritable_after", "must be > 0"},
		{oneOf(c.WS.LoginPolicy, LoginMulti, LoginSinglePerPlatform, LoginSingle), "ws.login_policy", "allowed: multi, single_per_platform, single"},
		{c.WS.RateLimit >= 0, "ws.rate_limit", "must be >= 0 (0 disables)"},
		{c.WS.RateLimit == 0 || c.WS.RateBurst >= 1, "ws.rate_burst", "must be >= 1 when ws.rate_limit > 0"},
		{c.WS.PresenceTTL >= time.Second, "ws.presence_ttl", "must be >= 1s"},
		{c.TwoPhase.IdempotencyTTL >= time.Minute, "two_phase.idempotency_ttl", "must be >= 1m"},
		{c.Streams.Shards >= 1 && c.Streams.Shards <= 1024, "streams.shards", "must be 1–1024"},
		{c.Streams.ReadCount >= 1, "streams.read_count", "must be >= 1"},
		{c.Streams.Block >= 10*time.Millisecond, "streams.block", "must be >= 10ms"},
		{c.Streams.ClaimMinIdle >= 100*time.Millisecond && c.Streams.ClaimMinIdle <= 5*time.Minute, "streams.claim_min_idle", "must be 100ms–5m"},
		{c.Streams.TrimInterval > 0, "streams.trim_interval", "must be > 0"},
		{c.Save.BatchSize >= 1 && c.Save.BatchSize <= 5000, "save.batch_size", "must be 1–5000"},
		{c.Save.BatchWait >= 0, "save.batch_wait", "must be >= 0"},
		{c.Save.MaxAttempts >= 1, "save.max_attempts", "must be >= 1"},
		{c.Save.RetryBackoff > 0 && c.Save.RetryBackoffMax >= c.Save.RetryBackoff, "save.retry_backoff", "must be > 0 and <= save.retry_backoff_max"},
		{c.Seq.LeaseBlock >= 1, "seq.lease_block", "must be >= 1"},
		{c.Msg.MaxBodyBytes >= 1 && int64(c.Msg.MaxBodyBytes) < c.WS.ReadLimit, "msg.max_body_bytes", "must be >= 1 and below ws.read_limit"},
		{c.Msg.RevokeWindow >= 0, "msg.revoke_window", "must be >= 0"},
		{c.Push.QueueSize >= 1, "push.queue_size", "must be >= 1"},
		{c.Push.Workers >= 1, "push.workers", "must be >= 1"},
		{c.Group.MinCreateMembers >= 2, "group.min_create_members", "must be >= 2"},
		{oneOf(c.Group.InvitePermission, InviteByMembers, InviteByAdmins), "group.invite_permission", "allowed: members, admins"},
		{c.Group.MaxIDsPerRequest >= c.Group.MinCreateMembers, "group.max_ids_per_request", "must be >= group.min_create_members"},
		{c.Group.MemberCacheTTL >= time.Second, "group.member_cache_ttl", "must be >= 1s"},
		{c.Group.LocalCacheTTL >= 0, "group.local_cache_ttl", "must be >= 0 (0 keeps nothing locally)"},
		{c.Group.LocalCacheSize >= 1, "group.local_cache_size", "must be >= 1"},
		{c.Group.LockTTL >= time.Second, "group.lock_ttl", "must be >= 1s"},
		{c.Group.LockWait > 0, "group.lock_wait", "must be > 0"},
		{oneOf(c.Group.Push.Mode, GroupPushAuto, GroupPushPush, GroupPushNotify, GroupPushNone), "group.push.mode", "allowed: auto, push, notify, none"},
		{c.Group.Push.GroupSizeThreshold >= 1, "group.push.group_size_threshold", "must be >= 1"},
		{c.Group.Push.OnlineUserThreshold >= 1, "group.push.online_user_threshold", "must be >= 1"},
		{c.Group.Push.NotifyMaxOnlineUser >= c.Group.Push.OnlineUserThreshold, "group.push.notify_max_online_user", "must be >= group.push.online_user_threshold"},
		{c.Group.Push.HugeGroupNoNotifySize >= c.Group.Push.GroupSizeThreshold, "group.push.huge_group_no_notify_size", "must be >= group.push.group_size_threshold"},
		{c.Group.Push.Workers >= 1, "group.push.workers", "must be >= 1"},
		{c.Sync.CursorFlushInterval >= time.Millisecond && c.Sync.CursorFlushInterval <= 10*time.Second, "sync.cursor_flush_interval", "must be 1ms–10s"},
		{c.Sync.ResendSingleMax >= 0, "sync.resend_single_max", "must be >= 0"},
		{c.Sync.ResendGroupMax >= 0, "sync.resend_group_max", "must be >= 0"},
		{c.Sync.ResendLockTTL >= 0, "sync.resend_lock_ttl", "must be >= 0 (0 disables the lock)"},
		{c.Sync.ResendConcurrency >= 1, "sync.resend_concurrency", "must be >= 1"},
		{c.Sync.GroupReceiptMaxMembers >= 0, "sync.group_receipt_max_members", "must be >= 0 (0 turns group read receipts off)"},
		{c.Sync.RevokeWait >= 0, "sync.revoke_wait", "must be >= 0"},
	}
	for _, ch := range checks {
		if !ch.ok {
			return errKey{ch.key, ch.msg}
		}
	}
	return nil
}

func validAddr(a string) bool {
	_, port, err := net.SplitHostPort(a)
	return err == nil && port != ""
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}
