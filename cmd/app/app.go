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
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway"
	"github.com/nexo-im/nexo/gateway/auth"
	"github.com/nexo-im/nexo/gateway/chat"
	"github.com/nexo-im/nexo/gateway/state"
	"github.com/nexo-im/nexo/gateway/ws"
	"github.com/nexo-im/nexo/store"
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

	passwords *auth.Passwords
	issuer    *auth.Issuer
	verifier  *auth.Verifier

	listener net.Listener
	server   *gateway.Server
	ws       *ws.Server
	mode     *chat.Mode
	metrics  *prometheus.Registry
	// onLogout is handed to the gateway; a step that owns live sessions
	// (the WebSocket hub) sets it before buildGateway runs.
	onLogout func(userID string, platformID int, jti string)
	// resender is offline resend (gateway/state), built with the messaging
	// step and run by the WebSocket gateway's OnConnect hook.
	resender *state.Resender
}

// New builds every component from cfg (already validated). On error it
// releases what it had built; the error names the step that failed.
func New(ctx context.Context, cfg configs.Config, logger *slog.Logger) (*App, error) {
	a := &App{cfg: cfg, embedded: cfg.Embedded(), log: logger, metrics: newRegistry()}
	steps := []struct {
		name  string
		build func(ctx context.Context) error
	}{
		{"storage", a.openStorage},
		{"migrations", a.migrate},
		{"auth", a.buildAuth},
		{"websocket", a.buildWebSocket},
		{"gateway", a.buildGateway},
		{"messaging", a.buildMessaging},
		{"observability", a.buildObservability},
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
		a.add(component{name: "database", stop: func(context.Context) error { return db.Close() }})
	}
	rdb, err := store.OpenRedis(ctx, a.cfg.Redis)
	if err != nil {
		return err
	}
	a.rdb = rdb
	a.keys = store.Keys{Prefix: a.cfg.Redis.KeyPrefix}
	a.add(component{name: "redis", stop: func(context.Context) error { return rdb.Close() }})
	return nil
}

// startEmbedded starts the in-process Redis (pointing cfg.Redis.Addr at it),
// opens the SQLite file, and generates a JWT secret when none is set.
func (a *App) startEmbedded(ctx context.Context) error {
	a.log.Warn("embedded development mode: not for production",
		"sqlite", a.cfg.SQLite.Path,
		"gives_up", "Redis state (tokens, presence, streams, seq counters) is in memory and lost at exit; one process only; SQLite instead of MySQL",
		"production", "set mysql.dsn and redis.addr (NEXO_MYSQL_DSN, NEXO_REDIS_ADDR)")
	addr, stopRedis, err := store.StartEmbeddedRedis()
	if err != nil {
		return err
	}
	a.add(component{name: "embedded redis", stop: func(context.Context) error { stopRedis(); return nil }})
	a.cfg.Redis.Addr = addr

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
	a.log.Info("schema ready", "dialect", a.db.Dialect, "version", store.LatestSchemaVersion(), "applied", applied)
	return nil
}

// buildAuth builds the repositories and token machinery the gateway uses.
func (a *App) buildAuth(context.Context) error {
	a.users = store.NewUserRepo(a.db)
	a.tokens = store.NewTokens(a.rdb, a.keys)
	var err error
	if a.passwords, err = auth.NewPasswords(a.cfg.Auth.BcryptCost); err != nil {
		return err
	}
	if a.issuer, err = auth.NewIssuer(a.cfg.JWT, a.tokens); err != nil {
		return err
	}
	a.verifier, err = auth.NewVerifier(a.cfg.JWT, a.tokens)
	return err
}

// buildGateway listens on http.addr and builds the HTTP server; other
// steps add their routes with a.server.Route after it.
func (a *App) buildGateway(context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.HTTP.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (http.addr): %w", a.cfg.HTTP.Addr, err)
	}
	a.listener = ln
	rdb := a.rdb
	a.server, err = gateway.NewServer(gateway.Deps{
		HTTP: a.cfg.HTTP, Logger: a.log, Listener: ln,
		Users: a.users, Passwords: a.passwords, Issuer: a.issuer, Verifier: a.verifier,
		Ready: []gateway.ReadyCheck{
			{Name: string(a.db.Dialect), Check: a.db.Ping},
			{Name: "redis", Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		},
		OnLogout: a.onLogout,
	})
	if err != nil {
		_ = ln.Close()
		return err
	}
	a.add(component{name: "http", run: a.server.Run, stop: func(context.Context) error {
		// Run closes the listener; this covers a start that failed before Run.
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	}})
	return nil
}
