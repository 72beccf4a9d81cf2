package configs

import (
	"errors"
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

// Validate checks every value and reports every problem at once: the error
// joins (errors.Join) one error per failing key, each naming the key, its
// environment variable and the allowed values, in the order of the checks.
func (c *Config) Validate() error {
	checks := []struct {
		ok       bool
		key, msg string
	}{
		{validAddr(c.HTTP.Addr), "http.addr", fmt.Sprintf("%q is not host:port (e.g. :8080)", c.HTTP.Addr)},
		{c.HTTP.ShutdownTimeout > 0, "http.shutdown_timeout", "must be > 0"},
		{c.HTTP.MaxBodyBytes >= 1024, "http.max_body_bytes", "must be >= 1024"},
		{c.MySQL.MaxOpenConns >= 1, "mysql.max_open_conns", "must be >= 1"},
		{c.MySQL.MaxIdleConns >= 0, "mysql.max_idle_conns", "must be >= 0"},
		{c.SQLite.Path != "", "sqlite.path", "must not be empty"},
		{c.Redis.Addr == "" || validAddr(c.Redis.Addr), "redis.addr", fmt.Sprintf("%q is not host:port", c.Redis.Addr)},
		{oneOf(c.Redis.Mode, RedisStandalone, RedisCluster, RedisSentinel), "redis.mode", "allowed: standalone, cluster, sentinel"},
		{allAddrs(c.Redis.Addrs), "redis.addrs", fmt.Sprintf("%q: every entry must be host:port", c.Redis.Addrs)},
		{c.Redis.Mode != RedisStandalone || len(c.Redis.Addrs) <= 1 && (c.Redis.Addr == "" || len(c.Redis.Addrs) == 0),
			"redis.addrs", "standalone takes one server: set redis.addr (or a single redis.addrs entry), not both"},
		{c.Redis.Mode == RedisStandalone || c.Redis.Addr == "", "redis.addr",
			"only for redis.mode standalone; cluster and sentinel take redis.addrs"},
		{c.Redis.Mode == RedisStandalone || len(c.Redis.Addrs) > 0, "redis.addrs",
			"must list the cluster seed nodes or the sentinels when redis.mode is " + c.Redis.Mode},
		{c.Redis.Mode != RedisSentinel || c.Redis.MasterName != "", "redis.master_name", "must be set when redis.mode is sentinel"},
		{c.Redis.Mode != RedisCluster || c.Redis.DB == 0, "redis.db", "must be 0 when redis.mode is cluster (Redis Cluster has one database)"},
		{c.Redis.TLS.Enabled || c.Redis.TLS.CAFile == "" && c.Redis.TLS.ServerName == "", "redis.tls.enabled",
			"must be true when redis.tls.ca_file or redis.tls.server_name is set"},
		{(c.MySQL.DSN == "") == (len(c.Redis.Addresses()) == 0), "mysql.dsn", "set both mysql.dsn and redis.addr (or redis.addrs), or neither (the embedded default)"},
		{c.Redis.PoolSize >= 1, "redis.pool_size", "must be >= 1"},
		{c.Redis.DB >= 0 && c.Redis.DB <= 15, "redis.db", "must be 0–15"},
		{c.Redis.KeyPrefix != "" && !strings.ContainsAny(c.Redis.KeyPrefix, "{} "), "redis.key_prefix", "must be non-empty, without braces or spaces"},
		{c.JWT.Secret == "" && c.Embedded() || len(c.JWT.Secret) >= MinJWTSecretLen, "jwt.secret",
			fmt.Sprintf("must be at least %d bytes (only the embedded default may leave it empty)", MinJWTSecretLen)},
		{c.JWT.TTL >= time.Minute, "jwt.ttl", "must be >= 1m"},
		{c.Auth.BcryptCost >= 4 && c.Auth.BcryptCost <= 31, "auth.bcrypt_cost", "must be 4–31"},
		{c.Redis.MemoryDegradedRatio >= 0 && c.Redis.MemoryDegradedRatio <= 1, "redis.memory_degraded_ratio", "must be 0–1 (0 turns the check off)"},
		{c.Auth.HashConcurrency >= 0, "auth.hash_concurrency", "must be >= 0 (0: half the CPUs)"},
		{c.Auth.HashWait > 0, "auth.hash_wait", "must be > 0"},
		{c.Metrics.Addr == "" || validAddr(c.Metrics.Addr), "metrics.addr", fmt.Sprintf("%q is not host:port (e.g. 127.0.0.1:9090)", c.Metrics.Addr)},
		{c.Metrics.Addr == "" || c.Metrics.Addr != c.HTTP.Addr, "metrics.addr", "must differ from http.addr"},
		{c.Metrics.Token == "" || len(c.Metrics.Token) >= 16, "metrics.token", "must be at least 16 characters (or empty)"},
		{c.HTTP.ReadHeaderTimeout >= 0, "http.read_header_timeout", "must be >= 0 (0 disables)"},
		{c.HTTP.IdleTimeout >= 0, "http.idle_timeout", "must be >= 0"},
		{c.HTTP.MaxConns >= 0, "http.max_conns", "must be >= 0 (0: no cap)"},
		{c.HTTP.MaxConnsPerIP >= 0, "http.max_conns_per_ip", "must be >= 0 (0: no cap)"},
		{validCIDRs(c.HTTP.TrustedProxies), "http.trusted_proxies", "must be CIDRs (e.g. 10.0.0.0/8) or IP addresses"},
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
		{c.TwoPhase.AcceptReplicas >= 0 && c.TwoPhase.AcceptReplicas <= 5, "two_phase.accept_replicas", "must be 0–5"},
		{c.TwoPhase.AcceptReplicasTimeout >= time.Millisecond && c.TwoPhase.AcceptReplicasTimeout <= 10*time.Second,
			"two_phase.accept_replicas_timeout", "must be 1ms–10s"},
		{c.TwoPhase.DuplicateCheckWait >= 0 && c.TwoPhase.DuplicateCheckWait <= 2*time.Second,
			"two_phase.duplicate_check_wait", "must be 0–2s"},
		{c.Streams.Shards >= 1 && c.Streams.Shards <= 1024, "streams.shards", "must be 1–1024"},
		{c.Streams.ReadCount >= 1, "streams.read_count", "must be >= 1"},
		{c.Streams.Block >= 10*time.Millisecond, "streams.block", "must be >= 10ms"},
		{c.Streams.ClaimMinIdle >= 100*time.Millisecond && c.Streams.ClaimMinIdle <= 5*time.Minute, "streams.claim_min_idle", "must be 100ms–5m"},
		{c.Streams.TrimInterval > 0, "streams.trim_interval", "must be > 0"},
		{c.Streams.DeadMaxLen >= 0, "streams.dead_max_len", "must be >= 0 (0: no cap)"},
		{c.Streams.DeliverRetryBackoff > 0 && c.Streams.DeliverRetryBackoffMax >= c.Streams.DeliverRetryBackoff, "streams.deliver_retry_backoff", "must be > 0 and <= streams.deliver_retry_backoff_max"},
		{c.Streams.DeadMaxAge >= 0, "streams.dead_max_age", "must be >= 0 (0: kept)"},
		{c.Streams.DeadMaxBodyBytes >= 64, "streams.dead_max_body_bytes", "must be >= 64"},
		{validName(c.Streams.Names.ToSave), "streams.names.to_save", "must be 1–64 characters of A-Z a-z 0-9 . _ -"},
		{validName(c.Streams.Names.ToDeliver), "streams.names.to_deliver", "must be 1–64 characters of A-Z a-z 0-9 . _ -"},
		{validName(c.Streams.Names.Dead), "streams.names.dead", "must be 1–64 characters of A-Z a-z 0-9 . _ -"},
		{distinct(c.Streams.Names.ToSave, c.Streams.Names.ToDeliver, c.Streams.Names.Dead, "owner", "epoch"), "streams.names.to_save",
			"streams.names.to_save, to_deliver and dead must differ from each other and from owner and epoch (the shard lease's keys)"},
		{validName(c.Streams.Names.SaveGroup), "streams.names.save_group", "must be 1–64 characters of A-Z a-z 0-9 . _ -"},
		{validName(c.Streams.Names.DeliverGroup), "streams.names.deliver_group", "must be 1–64 characters of A-Z a-z 0-9 . _ -"},
		{c.Save.BatchSize >= 1 && c.Save.BatchSize <= 5000, "save.batch_size", "must be 1–5000"},
		{c.Save.BatchWait >= 0, "save.batch_wait", "must be >= 0"},
		{c.Save.MaxAttempts >= 1, "save.max_attempts", "must be >= 1"},
		{c.Save.RetryBackoff > 0 && c.Save.RetryBackoffMax >= c.Save.RetryBackoff, "save.retry_backoff", "must be > 0 and <= save.retry_backoff_max"},
		{c.Seq.LeaseBlock >= 1, "seq.lease_block", "must be >= 1"},
		{c.Msg.MaxBodyBytes >= 1 && int64(c.Msg.MaxBodyBytes) < c.WS.ReadLimit, "msg.max_body_bytes", "must be >= 1 and below ws.read_limit"},
		{c.Msg.RevokeWindow >= 0, "msg.revoke_window", "must be >= 0"},
		{c.Msg.EditWindow >= 0, "msg.edit_window", "must be >= 0 (0 turns the limit off)"},
		{c.Msg.MaxReactionsPerUser >= 1 && c.Msg.MaxReactionsPerUser <= 100, "msg.max_reactions_per_user", "must be 1–100"},
		{len(c.Msg.ReactionEmojis) <= 1000, "msg.reaction_emojis", "at most 1000 entries"},
		{c.Push.QueueSize >= 1, "push.queue_size", "must be >= 1"},
		{c.Push.Workers >= 1, "push.workers", "must be >= 1"},
		{c.Group.MinCreateMembers >= 2, "group.min_create_members", "must be >= 2"},
		{oneOf(c.Group.InvitePermission, InviteByMembers, InviteByAdmins), "group.invite_permission", "allowed: members, admins"},
		{c.Group.MaxIDsPerRequest >= c.Group.MinCreateMembers, "group.max_ids_per_request", "must be >= group.min_create_members"},
		{c.Group.MaxMembers >= c.Group.MinCreateMembers, "group.max_members", "must be >= group.min_create_members"},
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
		{c.Sync.ReadCountInterval >= 10*time.Millisecond && c.Sync.ReadCountInterval <= time.Minute, "sync.read_count_interval", "must be 10ms–1m"},
		{c.Memory.IdleRelease == 0 || c.Memory.IdleRelease >= time.Second, "memory.idle_release", "must be 0 (off) or >= 1s"},
		{c.Memory.IdleAllocBytes >= 1<<20, "memory.idle_alloc_bytes", "must be >= 1048576"},
		{c.Sync.RecvOptCacheTTL >= 100*time.Millisecond && c.Sync.RecvOptCacheTTL <= time.Minute, "sync.recv_opt_cache_ttl", "must be 100ms–1m"},
		{c.Cluster.InstanceID == "" || validInstanceID(c.Cluster.InstanceID), "cluster.instance_id", "must be 1–64 characters of A-Z a-z 0-9 . _ - (empty: host name + HTTP port)"},
		{c.Cluster.HeartbeatInterval >= 50*time.Millisecond, "cluster.heartbeat_interval", "must be >= 50ms"},
		{c.Cluster.InstanceTTL >= 2*c.Cluster.HeartbeatInterval, "cluster.instance_ttl", "must be >= 2 × cluster.heartbeat_interval"},
		{oneOf(c.Cluster.Bus, BusRedis, BusNATS), "cluster.bus", "allowed: redis, nats"},
		{c.Cluster.Bus != BusNATS || c.Cluster.NATSURL != "", "cluster.nats_url", "is required when cluster.bus is nats"},
		{c.Cluster.InboxMaxAge >= time.Second, "cluster.inbox_max_age", "must be >= 1s"},
		{c.Cluster.InboxMaxLen >= 1000, "cluster.inbox_max_len", "must be >= 1000"},
		{c.HTTP.CORS.MaxAge >= 0, "http.cors.max_age", "must be >= 0"},
		{oneOf(c.Auth.Registration, "", RegistrationOpen, RegistrationClosed), "auth.registration", "allowed: open, closed (empty: closed when server_api.keys is set)"},
		{allLen(c.ServerAPI.Keys, 16), "server_api.keys", "each key must be at least 16 characters"},
		{!c.Auth.ExternalJWT.Enabled || c.Auth.ExternalJWT.Secret != "" || c.Auth.ExternalJWT.JWKSURL != "", "auth.external_jwt.enabled",
			"needs auth.external_jwt.secret (HS256) or auth.external_jwt.jwks_url"},
		{c.Auth.ExternalJWT.Secret == "" || len(c.Auth.ExternalJWT.Secret) >= MinJWTSecretLen, "auth.external_jwt.secret",
			fmt.Sprintf("must be at least %d bytes", MinJWTSecretLen)},
		{c.Auth.ExternalJWT.JWKSURL == "" || strings.HasPrefix(c.Auth.ExternalJWT.JWKSURL, "https://") || strings.HasPrefix(c.Auth.ExternalJWT.JWKSURL, "http://"),
			"auth.external_jwt.jwks_url", "must be an http(s) URL"},
		{c.Auth.ExternalJWT.JWKSRefresh >= time.Second, "auth.external_jwt.jwks_refresh", "must be >= 1s"},
		{c.Auth.ExternalJWT.JWKSMinRefresh >= 0 && c.Auth.ExternalJWT.JWKSMinRefresh <= c.Auth.ExternalJWT.JWKSRefresh, "auth.external_jwt.jwks_min_refresh", "must be 0..auth.external_jwt.jwks_refresh"},
		{c.Auth.ExternalJWT.UserIDClaim != "", "auth.external_jwt.user_id_claim", "must not be empty"},
		{c.Auth.ExternalJWT.PlatformClaim != "", "auth.external_jwt.platform_claim", "must not be empty"},
		{c.Auth.ExternalJWT.DefaultPlatform >= 0 && c.Auth.ExternalJWT.DefaultPlatform <= 9, "auth.external_jwt.default_platform", "must be 0 (claim required) or a platform id 1–9"},
		{c.Auth.ExternalJWT.Leeway >= 0, "auth.external_jwt.leeway", "must be >= 0"},
		{knownEvents(c.Webhooks.Events), "webhooks.events", "allowed: before_send, after_send, user_online, user_offline, group_changed, offline_push, message_reported"},
		{len(c.Webhooks.Events) == 0 || len(c.Webhooks.Secret) >= 16, "webhooks.secret", "must be at least 16 characters when webhooks.events is set"},
		{eventsHaveURLs(&c.Webhooks), "webhooks.url", "every event in webhooks.events needs webhooks.url or its own url"},
		{c.Webhooks.Timeout > 0, "webhooks.timeout", "must be > 0"},
		{c.Webhooks.MaxAttempts >= 1, "webhooks.max_attempts", "must be >= 1"},
		{c.Webhooks.RetryBackoff > 0 && c.Webhooks.RetryBackoffMax >= c.Webhooks.RetryBackoff, "webhooks.retry_backoff", "must be > 0 and <= webhooks.retry_backoff_max"},
		{c.Webhooks.DeadMaxLen >= 0, "webhooks.dead_max_len", "must be >= 0 (0: no cap)"},
		{c.Webhooks.DeadMaxBodyBytes >= 64, "webhooks.dead_max_body_bytes", "must be >= 64"},
		{c.Webhooks.Workers >= 1, "webhooks.workers", "must be >= 1"},
		{c.Webhooks.BatchSize >= 1 && c.Webhooks.BatchSize <= MaxWebhookBatch, "webhooks.batch_size", "must be 1..128"},
		{c.Webhooks.BeforeSend.Timeout > 0, "webhooks.before_send.timeout", "must be > 0"},
		{oneOf(c.Webhooks.BeforeSend.OnError, OnErrorAllow, OnErrorReject), "webhooks.before_send.on_error", "allowed: allow, reject"},
		{c.Webhooks.OfflinePush.BatchWait >= 0, "webhooks.offline_push.batch_wait", "must be >= 0"},
		{oneOf(c.Webhooks.OfflinePush.Preview, "text", "none"), "webhooks.offline_push.preview", "allowed: text, none"},
		{c.Webhooks.OfflinePush.PreviewChars >= 1, "webhooks.offline_push.preview_chars", "must be >= 1"},
		{c.Cluster.DrainDelay >= 0 && c.Cluster.DrainDelay < c.HTTP.ShutdownTimeout, "cluster.drain_delay", "must be >= 0 and below http.shutdown_timeout"},
		{c.Search.Timeout > 0, "search.timeout", "must be > 0"},
		{c.Push.GroupWindow >= 0, "push.group_window", "must be >= 0"},
		{oneOf(c.Push.Preview, "text", "sender_only", "none"), "push.preview", "allowed: text, sender_only, none"},
		{c.Push.PreviewChars >= 1, "push.preview_chars", "must be >= 1"},
		{c.Push.MaxDevicesPerUser >= 1, "push.max_devices_per_user", "must be >= 1"},
		{c.Push.ResolveBatch >= 1, "push.resolve_batch", "must be >= 1"},
		{c.Push.MaxAttempts >= 1, "push.max_attempts", "must be >= 1"},
		{c.Push.RetryBackoff > 0 && c.Push.RetryBackoffMax >= c.Push.RetryBackoff, "push.retry_backoff", "must be > 0 and <= push.retry_backoff_max"},
		{c.Push.RetryAfterMax >= 0, "push.retry_after_max", "must be >= 0"},
		{c.Push.Timeout > 0, "push.timeout", "must be > 0"},
		{c.Push.FCM.Concurrency >= 1 && c.Push.APNs.Concurrency >= 1 && c.Push.WebPush.Concurrency >= 1, "push.*.concurrency", "must be >= 1"},
		{c.Push.APNs.KeyFile == "" || c.Push.APNs.KeyID != "" && c.Push.APNs.TeamID != "" && c.Push.APNs.Topic != "", "push.apns.key_file",
			"needs push.apns.key_id, team_id and topic (the app's bundle ID)"},
		{(c.Push.WebPush.VAPIDPublicKey == "") == (c.Push.WebPush.VAPIDPrivateKey == ""), "push.webpush.vapid_private_key",
			"set both vapid_public_key and vapid_private_key, or neither"},
		{c.Push.WebPush.VAPIDPublicKey == "" || strings.HasPrefix(c.Push.WebPush.Subject, "mailto:") || strings.HasPrefix(c.Push.WebPush.Subject, "https://"),
			"push.webpush.subject", "must be a mailto: or https:// contact"},
		{c.Search.IndexBatch >= 1, "search.index_batch", "must be >= 1"},
		{c.Retention.MaxAge == 0 || c.Retention.MaxAge >= time.Minute, "retention.max_age", "must be 0 (off) or >= 1m"},
		{c.Retention.CleanInterval >= time.Second, "retention.clean_interval", "must be >= 1s"},
		{c.Retention.CleanBatch >= 1 && c.Retention.CleanBatch <= 10000, "retention.clean_batch", "must be 1–10000"},
		{c.Retention.CleanPause >= 0 && c.Retention.CleanPause <= time.Minute, "retention.clean_pause", "must be 0–1m"},
		{c.Retention.CleanPauseRatio >= 0 && c.Retention.CleanPauseRatio <= 100, "retention.clean_pause_ratio", "must be 0–100"},
		{oneOf(c.Moderation.Action, ModerationRefuse, ModerationMask), "moderation.action", "allowed: refuse, mask"},
		{c.Search.IndexWait >= 0, "search.index_wait", "must be >= 0"},
		{c.Limits.LoginBackoff.Max >= 0, "limits.login_backoff.max", "must be >= 0 (0 disables the backoff)"},
		{c.Limits.LoginBackoff.Window >= 0, "limits.login_backoff.window", "must be >= 0 (0 disables the backoff)"},
		{oneOf(c.Objects.Backend, "", ObjectsBackendLocal, ObjectsBackendS3), "objects.backend", "allowed: local, s3 (empty: local in the embedded default, uploads off otherwise)"},
		{c.Embedded() || c.Objects.Backend != ObjectsBackendLocal || c.Objects.Local.Dir != "", "objects.local.dir", "must name the shared directory when objects.backend is local outside the embedded default"},
		{c.Embedded() || c.Objects.Backend != ObjectsBackendLocal || c.Objects.Local.Shared, "objects.local.shared",
			"objects.backend local outside the embedded default needs a directory every instance shares: set objects.local.shared: true once objects.local.dir is such a mount, or use objects.backend: s3"},
		{c.Objects.Backend != ObjectsBackendS3 || c.Objects.S3.Endpoint != "" && !strings.Contains(c.Objects.S3.Endpoint, "://"), "objects.s3.endpoint", "must be host[:port] without a scheme when objects.backend is s3"},
		{c.Objects.Backend != ObjectsBackendS3 || c.Objects.S3.Bucket != "", "objects.s3.bucket", "must be set when objects.backend is s3"},
		{oneOf(c.Objects.S3.SSE, "", "s3"), "objects.s3.sse", "allowed: \"\" (none), s3"},
		{c.Objects.MaxBytes >= 1024, "objects.max_bytes", "must be >= 1024"},
		{c.Objects.MaxDirectBytes >= 1024 && c.Objects.MaxDirectBytes <= c.Objects.MaxBytes && c.Objects.MaxDirectBytes <= 1<<30, "objects.max_direct_bytes", "must be 1024..min(objects.max_bytes, 1 GiB)"},
		{c.Objects.PartSize >= 5<<20 && c.Objects.PartSize <= 1<<30, "objects.part_size", "must be 5 MiB..1 GiB (S3's bounds)"},
		{c.Objects.MaxImageBytes >= 0 && c.Objects.MaxAudioBytes >= 0 && c.Objects.MaxVideoBytes >= 0, "objects.max_image_bytes", "objects.max_{image,audio,video}_bytes must be >= 0 (0: objects.max_bytes)"},
		{c.Objects.MaxImagePixels >= 1, "objects.max_image_pixels", "must be >= 1"},
		{c.Objects.ThumbnailPx >= 16 && c.Objects.ThumbnailPx <= 4096, "objects.thumbnail_px", "must be 16..4096"},
		{c.Objects.ThumbWorkers >= 1, "objects.thumb_workers", "must be >= 1"},
		{c.Objects.UserQuotaBytes >= 0, "objects.user_quota_bytes", "must be >= 0 (0: no quota)"},
		{c.Objects.URLTTL >= time.Second && c.Objects.URLTTL <= 7*24*time.Hour, "objects.url_ttl", "must be 1s..168h (S3 presigned URLs last at most 7 days)"},
		{c.Objects.OrphanTTL >= time.Minute, "objects.orphan_ttl", "must be >= 1m"},
		{c.Objects.CleanInterval >= time.Second, "objects.clean_interval", "must be >= 1s"},
		{c.Limits.DeadLetters.Count == 0 || c.Limits.DeadLetters.Count > 0 && c.Limits.DeadLetters.Window > 0 && c.Limits.DeadLetters.Block > 0,
			"limits.dead_letters.count", "must be >= 0 (0 disables); with count > 0, window and block must be > 0"},
	}
	for _, l := range []struct {
		key string
		r   Rate
	}{{"limits.login_ip", c.Limits.LoginIP}, {"limits.login_account", c.Limits.LoginAccount}, {"limits.register_ip", c.Limits.RegisterIP},
		{"limits.group_invite", c.Limits.GroupInvite}, {"limits.group_added", c.Limits.GroupAdded}, {"limits.search", c.Limits.Search}, {"limits.export", c.Limits.Export},
		{"limits.report", c.Limits.Report}, {"objects.upload", c.Objects.Upload}} {
		checks = append(checks, struct {
			ok       bool
			key, msg string
		}{l.r.Rate == 0 || l.r.Rate > 0 && l.r.Period > 0 && l.r.Burst >= 1, l.key + ".rate",
			"rate must be >= 0 (0 disables); with rate > 0, period must be > 0 and burst >= 1"})
	}
	var errs []error
	for _, ch := range checks {
		if !ch.ok {
			errs = append(errs, errKey{ch.key, ch.msg})
		}
	}
	if _, err := c.Moderation.Words(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validInstanceID allows what is safe in a Redis key, a NATS stream name
// and a stream consumer name.
func validInstanceID(id string) bool { return validName(id) }

// validName: 1–64 characters of A-Z a-z 0-9 . _ - (no ':' or braces, so a
// name cannot reach into another key or hash tag).
func validName(id string) bool {
	if len(id) > 64 {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return false
		}
	}
	return id != ""
}

// validCIDRs reports whether every entry is a CIDR or a bare IP address.
func validCIDRs(list []string) bool {
	for _, s := range list {
		if _, _, err := net.ParseCIDR(s); err != nil && net.ParseIP(s) == nil {
			return false
		}
	}
	return true
}

// distinct reports whether no value appears twice.
func distinct(vs ...string) bool {
	seen := make(map[string]bool, len(vs))
	for _, v := range vs {
		if seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

func allLen(vs []string, n int) bool {
	for _, v := range vs {
		if len(v) < n {
			return false
		}
	}
	return true
}

func knownEvents(events []string) bool {
	for _, e := range events {
		if !oneOf(e, EventBeforeSend, EventAfterSend, EventUserOnline, EventUserOffline, EventGroupChanged, EventOfflinePush, EventMessageReported) {
			return false
		}
	}
	return true
}

func eventsHaveURLs(w *Webhooks) bool {
	for _, e := range w.Events {
		if w.EventURL(e) == "" {
			return false
		}
	}
	return true
}

func validAddr(a string) bool {
	_, port, err := net.SplitHostPort(a)
	return err == nil && port != ""
}

func allAddrs(addrs []string) bool {
	for _, a := range addrs {
		if !validAddr(a) {
			return false
		}
	}
	return true
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// Warnings lists settings that are valid but unsafe in production, for
// nexo config check and the start-up log.
func (c *Config) Warnings() []string {
	var out []string
	if c.Push.WebPush.AllowInsecureEndpoints {
		out = append(out, "push.webpush.allow_insecure_endpoints is true: http:// Web Push endpoints are accepted (for tests only)")
	}
	return out
}
