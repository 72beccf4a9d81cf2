// Package app wires Nexo's components into one process: storage, auth, the
// HTTP and WebSocket gateway, the message pipeline. cmd/nexo runs it; the
// end-to-end tests and nexo-bench's in-process mode start it too.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/cluster"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/services/account"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/moderation"
	"github.com/nexo-im/nexo/services/presence"
	"github.com/nexo-im/nexo/services/privacy"
	"github.com/nexo-im/nexo/services/push"
	"github.com/nexo-im/nexo/services/search"
	"github.com/nexo-im/nexo/services/sync"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
	"github.com/nexo-im/nexo/workers"
)

// component is one long-lived part of the process. run, when set, blocks
// until ctx is done (or it fails) and then returns having stopped its work:
// the HTTP server stops accepting and drains, a worker finishes its batch.
// stop, when set, releases what the component holds (connections, files);
// it runs after every run has returned, in reverse order of registration,
// so what is built first (the database) is closed last.
type component struct {
	name string
	run  func(ctx context.Context) error
	stop func(ctx context.Context) error
}

// App is the wired process: its configuration, shared dependencies and the
// components to run. New builds it step by step; each step may use what
// earlier steps set and registers its own components with add.
type App struct {
	// cfg is the configuration as the process uses it: in embedded mode
	// redis.addr points at the in-process Redis and jwt.secret may have been
	// generated.
	cfg        configs.Config
	embedded   bool
	log        *slog.Logger
	components []component

	db     *store.DB
	rdb    redis.UniversalClient
	keys   store.Keys
	users  *store.UserRepo
	tokens *store.Tokens
	// blocks and dmGate: who blocked whom, and the cached single-chat
	// check every send path, typing and the account service share.
	blocks *store.BlockRepo
	dmGate *account.DMGate
	// words is the word filter (moderation.*), shared by the account,
	// chat and group services and reloaded by SetModeration (SIGHUP).
	words *moderation.Filter
	// reports is the message report service (buildReports).
	reports *moderation.Reports

	passwords *auth.Passwords
	issuer    *auth.Issuer
	verifier  *auth.Verifier
	// limiter keeps every rate limit in Redis (shared by all instances);
	// userLimit is the per-user request limit on it (ws.rate_limit).
	limiter   *limits.Limiter
	userLimit *limits.UserRequests

	listener net.Listener
	server   *gateway.Server
	// accounts is the account service: the user and auth routes and the
	// server API's user routes.
	accounts *account.Service
	// opsListener and opsMux serve the operator routes (/metrics, pprof)
	// when metrics.addr is set; nil otherwise (see buildOps, mountOps).
	opsListener net.Listener
	opsMux      *http.ServeMux
	ws          *ws.Server
	mode        *chat.Mode
	metrics     *prometheus.Registry
	// resender is offline resend (services/sync), built with the messaging
	// step and run by the WebSocket gateway's OnConnect hook.
	resender *sync.Resender
	// audit writes the message path's audit lines (docs/operations.md).
	audit *domain.Audit
	// member is this process's cluster membership (cmd/app/cluster.go);
	// its ID is the consumer name and its incarnation names this instance
	// in the presence record.
	member *store.Membership
	// presence is the shared presence record (store.Presence, counting
	// only live instances for routing): the cluster router reads it,
	// realtime writes this instance's part.
	presence *store.Presence
	// push is the built-in push's device service; nil when push.enabled
	// is false.
	push *push.Service

	// Integration: set by buildMessaging and buildIntegration.
	chat   *chat.Service
	groups *group.Service
	// privacy is account deletion, export, retention and clearing;
	// cleaner its retention sweeper (cmd/app/privacy.go).
	privacy *privacy.Service
	cleaner *privacy.Cleaner
	// search is message, user and group search; nil when search.enabled is off.
	search   *search.Service
	members  *group.Members
	realtime *presence.Realtime
	// relay is the cluster's ws.Registry over ws: every push and session
	// event goes through it (cmd/app/cluster.go).
	relay *cluster.Relay
	// shardsOf, when set, reports which stream shards each live instance
	// owns, by instance id, for GET /admin/cluster.
	shardsOf func(ctx context.Context) map[string][]int
	// onDrain runs when shutdown begins (SIGTERM), after /readyz turned 503
	// and before connections close: shard leases are released here.
	onDrain []func(ctx context.Context)

	// pipeline runs the save and deliver stages; with a shared Redis only on
	// the shards this instance holds leases for (ReleaseShards, Shards).
	pipeline    *workers.Pipeline
	shardLeases *streams.ShardLeases
	// idleTrims run when the process is idle, before it returns its free
	// heap to the system (memory.idle_release, cmd/app/memory.go).
	idleTrims []func(context.Context) int64
}

// New builds every component from cfg (already validated). On error it
// releases what it had built; the error names the step that failed.
func New(ctx context.Context, cfg configs.Config, logger *slog.Logger) (*App, error) {
	cfg.ResolveObjects() // while Embedded still tells the mode (docs/media.md)
	a := &App{cfg: cfg, embedded: cfg.Embedded(), log: logger, metrics: newRegistry()}
	steps := []struct {
		name  string
		build func(ctx context.Context) error
	}{
		{"storage", a.openStorage},
		{"migrations", a.migrate},
		{"deployment check", a.bindDeployment},
		{"auth", a.buildAuth},
		{"listener", a.listen},
		{"cluster membership", a.buildMembership},
		{"websocket", a.buildWebSocket},
		{"cluster relay", a.buildRelay},
		{"gateway", a.buildGateway},
		{"messaging", a.buildMessaging},
		{"observability", a.buildObservability},
		{"pprof", a.buildPprof},
		{"memory upkeep", a.buildMemory},
		{"web client", a.buildWeb},
	}
	for _, s := range steps {
		if err := s.build(ctx); err != nil {
			a.stopAll()
			return nil, fmt.Errorf("start %s: %w", s.name, err)
		}
	}
	return a, nil
}

// add registers a component; see component for the order guarantees.
func (a *App) add(c component) { a.components = append(a.components, c) }

// Run serves until ctx is done (SIGINT/SIGTERM) or a component fails, then
// shuts down in order: every component's run returns (the HTTP server stops
// accepting and waits up to http.shutdown_timeout for in-flight requests;
// the pipeline finishes and acknowledges the batches in hand), then each
// stop runs in reverse order (Redis, then the database, are closed last).
func (a *App) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range a.components {
		if c.run == nil {
			continue
		}
		g.Go(func() error {
			if err := c.run(gctx); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			return nil
		})
	}
	a.log.Info("nexo started", "addr", a.listener.Addr().String(), "embedded", a.embedded)
	err := g.Wait()
	a.log.Info("shutting down")
	a.stopAll()
	if err != nil {
		return err
	}
	a.log.Info("stopped")
	return nil
}

// stopAll runs every stop in reverse order of registration, each bounded
// by http.shutdown_timeout; failures are logged, not fatal.
func (a *App) stopAll() {
	for _, c := range slices.Backward(a.components) {
		if c.stop == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.HTTP.ShutdownTimeout)
		if err := c.stop(ctx); err != nil {
			a.log.Warn("stop failed", "component", c.name, "err", err)
		}
		cancel()
	}
	a.components = nil
}

// openStorage opens the database and Redis: MySQL and the configured Redis
// when mysql.dsn is set, else the embedded default (an SQLite file and an
// in-process Redis).
func (a *App) openStorage(ctx context.Context) error {
	if a.embedded {
		if err := a.startEmbedded(ctx); err != nil {
			return err
		}
	} else {
		db, err := store.OpenMySQL(ctx, a.cfg.MySQL)
		if err != nil {
			return err
		}
		a.db = db
		a.log.Info("database sessions", "isolation", db.Isolation)
		a.add(component{name: "database", stop: func(context.Context) error { return db.Close() }})
	}
	rdb, err := store.OpenRedis(ctx, a.cfg.Redis, store.NewRedisMetrics(a.metrics, a.cfg.Redis.Mode))
	if err != nil {
		return err
	}
	store.CountRedisOps(rdb) // the pipeline stages' nexo_stage_redis_calls_total
	a.rdb = rdb
	a.keys = store.Keys{Prefix: a.cfg.Redis.KeyPrefix}
	dbPool, err := store.NewDBPoolCollector(a.db)
	if err != nil {
		return err
	}
	a.metrics.MustRegister(dbPool, store.NewRedisPoolCollector(rdb))
	if err := store.CountDBErrors(a.db, a.metrics); err != nil {
		return err
	}
	a.add(component{name: "redis", stop: func(context.Context) error { return rdb.Close() }})
	a.warnShards(ctx)
	return nil
}

// warnShards logs a warning when the stream shards cannot spread over the
// Redis Cluster's masters evenly enough (docs/deploy.md: shards >= 2 x
// masters, so a master's share of the pipeline is at most about 1.5x the
// mean).
func (a *App) warnShards(ctx context.Context) {
	if a.cfg.Redis.Mode != configs.RedisCluster {
		return
	}
	n, err := store.Masters(ctx, a.rdb)
	if err != nil {
		a.log.Warn("count redis masters", "err", err)
		return
	}
	a.log.Info("redis cluster", "masters", n, "streams.shards", a.cfg.Streams.Shards)
	if a.cfg.Streams.Shards < 2*n {
		a.log.Warn("streams.shards is below 2 x the Redis Cluster masters: some masters carry no or twice the pipeline load",
			"streams.shards", a.cfg.Streams.Shards, "masters", n, "want_at_least", 2*n, "see", "docs/deploy.md#redis")
	}
}

// startEmbedded starts the in-process Redis (pointing cfg.Redis.Addr at it),
// opens the SQLite file, and generates a JWT secret when none is set.
func (a *App) startEmbedded(ctx context.Context) error {
	a.log.Warn("embedded development mode: not for production",
		"sqlite", a.cfg.SQLite.Path,
		"gives_up", "Redis state (tokens, presence, streams, seq counters) is in memory and lost at exit; one process only; SQLite instead of MySQL",
		"production", "set mysql.dsn and redis.addr or redis.addrs (NEXO_MYSQL_DSN, NEXO_REDIS_ADDR, NEXO_REDIS_MODE)")
	addr, stopRedis, err := store.StartEmbeddedRedis()
	if err != nil {
		return err
	}
	a.add(component{name: "embedded redis", stop: func(context.Context) error { stopRedis(); return nil }})
	a.cfg.Redis.Mode, a.cfg.Redis.Addr, a.cfg.Redis.Addrs = configs.RedisStandalone, addr, nil

	db, err := store.OpenSQLite(ctx, a.cfg.SQLite.Path)
	if err != nil {
		return err
	}
	a.db = db
	a.add(component{name: "database", stop: func(context.Context) error { return db.Close() }})

	if a.cfg.JWT.Secret == "" {
		secret := make([]byte, 32)
		if _, err := io.ReadFull(rand.Reader, secret); err != nil {
			return fmt.Errorf("generate jwt secret: %w", err)
		}
		a.cfg.JWT.Secret = hex.EncodeToString(secret)
		a.log.Warn("jwt.secret is empty: generated a random one for this run; tokens will not survive a restart (set NEXO_JWT_SECRET to keep the secret)")
	}
	return nil
}

// migrate brings the schema to this build's version (idempotent; on MySQL
// concurrent starts serialize on a named lock).
func (a *App) migrate(ctx context.Context) error {
	applied, err := a.db.Migrate(ctx)
	if err != nil {
		return err
	}
	proc, err := a.db.SaveProcedure()
	a.log.Info("schema ready", "dialect", a.db.Dialect, "version", store.LatestSchemaVersion(), "applied", applied,
		"save_procedure", proc)
	if err != nil {
		a.log.Warn("one-message saves send a compound statement instead of calling a stored procedure,"+
			" at more database CPU (grant CREATE ROUTINE, or EXECUTE when migrations run as another user; docs/deploy.md)", "err", err)
	}
	return nil
}

// buildAuth builds the repositories and token machinery the gateway uses.
func (a *App) buildAuth(context.Context) error {
	a.users = store.NewUserRepo(a.db)
	a.blocks = store.NewBlockRepo(a.db)
	a.dmGate = account.NewDMGate(a.users, a.blocks, store.NewContacts(a.db), account.DefaultDMGateTTL, a.metrics)
	var err error
	if a.words, err = moderation.NewFilter(a.cfg.Moderation); err != nil {
		return err
	}
	a.tokens = store.NewTokens(a.rdb, a.keys)
	a.limiter = limits.New(a.rdb, a.cfg.Redis.KeyPrefix, a.metrics, a.log)
	a.userLimit = limits.NewUserRequests(a.limiter, a.cfg.WS.RateLimit, a.cfg.WS.RateBurst)
	if a.passwords, err = auth.NewPasswords(a.cfg.Auth.BcryptCost); err != nil {
		return err
	}
	if a.issuer, err = auth.NewIssuer(a.cfg.JWT, a.tokens); err != nil {
		return err
	}
	if a.verifier, err = auth.NewVerifier(a.cfg.JWT, a.tokens); err != nil {
		return err
	}
	return a.buildExternalJWT()
}

// listen opens http.addr early: the default instance id is named after
// the port actually bound.
func (a *App) listen(context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.HTTP.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (http.addr): %w", a.cfg.HTTP.Addr, err)
	}
	a.listener = ln
	return nil
}

// buildGateway builds the HTTP server on the listener; other steps add
// their routes with a.server.Route after it.
func (a *App) buildGateway(context.Context) error {
	ln := a.listener
	rdb := a.rdb
	var err error
	a.server, err = gateway.NewServer(gateway.Deps{
		HTTP: a.cfg.HTTP, Logger: a.log, Listener: ln, Verifier: a.verifier, MaxUploadBytes: maxUploadBody(&a.cfg),
		Ready: []gateway.ReadyCheck{
			{Name: string(a.db.Dialect), Check: a.db.Ping},
			{Name: "redis", Check: func(ctx context.Context) error { return store.PingRedis(ctx, rdb) }},
		},
		Degraded:  []gateway.ReadyCheck{{Name: "redis_memory", Check: redisMemoryCheck(rdb, a.cfg.Redis.MemoryDegradedRatio)}},
		CORS:      corsMiddleware(a.cfg),
		Registry:  a.metrics,
		AccessLog: a.cfg.Log.Access,
		OnDrain: func(ctx context.Context) {
			for _, fn := range a.onDrain {
				fn(ctx)
			}
		},
		DrainDelay: a.cfg.Cluster.DrainDelay,
	})
	if err != nil {
		_ = ln.Close()
		return err
	}
	a.accounts = account.NewService(account.Deps{
		Users: a.users, Contacts: store.NewContacts(a.db), Blocks: a.blocks, Gate: a.dmGate, Passwords: a.passwords, Tokens: auth.AccountTokens{Issuer: a.issuer}, Store: a.tokens,
		Sessions: hubSessions{a}, Limits: limits.NewAccounts(a.limiter, a.cfg.Limits), Auth: a.cfg.Auth,
		RegistrationClosed: !a.cfg.RegistrationIsOpen(), Words: a.words, Devices: pushDevices{a},
	})
	routes.Account(a.server, a.accounts, a.cfg.HTTP.MaxBodyBytes, a.log)
	a.add(component{name: "http", run: a.server.Run, stop: func(context.Context) error {
		// Run closes the listener; this covers a start that failed before Run.
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	}})
	return nil
}
