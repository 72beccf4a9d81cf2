package ws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/google/uuid"
	"github.com/hertz-contrib/websocket"
	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Authenticator checks a handshake token: signature, expiry and revocation.
// It returns the token's user_id, platform_id, jti and expiry, or one of
// domain.ErrTokenMissing, ErrTokenInvalid, ErrTokenExpired, ErrTokenRevoked
// (wrapped or not); any other error is an outage (answered 5xx).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (userID string, platformID int, jti string, expiresAt time.Time, err error)
}

// TokenChecker reports whether a session (user, platform, jti) is still
// active. The server asks it every ping interval as a backstop for
// revocations that RevokeSession did not deliver (another instance's
// logout); an error keeps the connection.
type TokenChecker interface {
	IsActive(ctx context.Context, userID string, platformID int, jti string) (bool, error)
}

// Deps are the server's collaborators. Auth is required; the rest are
// optional (nil disables the token backstop, metrics registration,
// logging).
type Deps struct {
	Auth    Authenticator
	Tokens  TokenChecker
	Logger  *slog.Logger
	Metrics prometheus.Registerer
	// Limiter, when set, is the per-user request limit (gateway/limits,
	// shared with HTTP sends and every instance); every request frame
	// counts one. nil: no limit.
	Limiter RequestLimiter
	// OnConnect, when set, runs once per connection after it is
	// authenticated and registered (pushes to it are delivered), on a
	// goroutine of its own with the connection's context, which ends when
	// the connection closes. Presence and offline resend hang here.
	OnConnect func(ctx context.Context, c *Conn)
	// Audit, when set, gets a "push" line per connection a frame tagged
	// with Frame.WithMsg is queued to (debug) or refused by (warn), with
	// that connection's user_id, platform_id and conn_id.
	Audit *domain.Audit
}

// RequestLimiter counts one request of a user: nil when allowed, else a
// too_many_requests *wire.Error with RetryAfter (limits.UserRequests).
type RequestLimiter interface {
	AllowRequest(ctx context.Context, userID string) error
}

// Server is the WebSocket gateway of one process: handshake handler,
// dispatch table, sessions and the local connection registry.
type Server struct {
	cfg      configs.WS
	auth     Authenticator
	tokens   TokenChecker
	onConn   func(ctx context.Context, c *Conn)
	audit    *domain.Audit
	log      *slog.Logger
	metrics  *metrics
	limiter  RequestLimiter
	upgrader websocket.HertzUpgrader
	reg      *registry
	base     context.Context
	stop     context.CancelFunc

	hmu      sync.RWMutex
	handlers map[int]HandlerFunc

	mu       sync.Mutex
	shutdown bool
	sessions sync.WaitGroup

	warnUnclosable sync.Once
}

// Per-connection buffer sizes, chosen by BenchmarkIdleConnMemory
// (docs/gateway.md): reads go through a small bufio buffer over the
// transport's own buffering, and writes borrow a pooled buffer only while a
// frame is being written, so an idle connection holds neither.
const (
	readBufferSize  = 256
	writeBufferSize = 4096
)

// New builds the gateway from its config section (already validated by
// configs.Validate) and dependencies. It fails when Auth is missing or the
// metrics cannot be registered.
func New(cfg configs.WS, deps Deps) (*Server, error) {
	if deps.Auth == nil {
		return nil, errors.New("ws.New: Deps.Auth is required")
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(deps.Metrics)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		auth:     deps.Auth,
		tokens:   deps.Tokens,
		onConn:   deps.OnConnect,
		audit:    deps.Audit,
		log:      log,
		metrics:  m,
		limiter:  deps.Limiter,
		reg:      newRegistry(cfg.LoginPolicy),
		handlers: make(map[int]HandlerFunc),
	}
	s.base, s.stop = context.WithCancel(context.Background())
	s.upgrader = websocket.HertzUpgrader{
		ReadBufferSize:  readBufferSize,
		WriteBufferSize: writeBufferSize,
		WriteBufferPool: &sync.Pool{},
		// Checked before the upgrade with ws.allowed_origins (originAllowed).
		CheckOrigin: func(*app.RequestContext) bool { return true },
		Error:       s.upgradeError,
	}
	return s, nil
}

// Handle registers h for reqIdentifier, replacing any earlier one. It is
// safe to call while serving; register before mounting Handler so no
// request meets unknown_request.
func (s *Server) Handle(reqIdentifier int, h HandlerFunc) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	s.handlers[reqIdentifier] = h
}

func (s *Server) handler(reqIdentifier int) HandlerFunc {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	return s.handlers[reqIdentifier]
}

// RevokeSession closes the connections of userID whose token was revoked
// (logout, or a newer login that replaced it): each gets a 3001
// session_invalid frame and a close, and receives no push after this call;
// a matching connection accepted before this call that registers after it
// is closed the same way. platformID <= 0 matches every platform and jti ""
// every token, so RevokeSession(u, 0, "") ends all of u's sessions here. It
// returns how many connections it closed.
func (s *Server) RevokeSession(userID string, platformID int, jti string) int {
	end := func(c *Conn) {
		c.gateClose(wire.NewError(wire.ReasonSessionInvalid, "the session was revoked (logout or a newer login)"))
	}
	revoked := s.reg.endWhere(userID, sessionMark{before: time.Now(), end: end, match: func(c *Conn) bool {
		return (platformID <= 0 || c.platformID == platformID) && (jti == "" || c.jti == jti)
	}})
	for _, c := range revoked {
		end(c)
	}
	return len(revoked)
}

// kick closes a connection displaced by the login policy with a 2002
// kicked frame; the registry already removed it.
func (s *Server) kick(c *Conn) {
	s.metrics.kicks.Inc()
	c.closeWith(string(wire.ReasonKicked), kickFrame(s.cfg.LoginPolicy), ClosePolicyViolation, string(wire.ReasonKicked))
	s.log.Debug("ws kicked", "conn_id", c.id, "user_id", c.userID, "platform_id", c.platformID)
}

// begin admits a session unless the server is shutting down.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return false
	}
	s.sessions.Add(1)
	return true
}

func (s *Server) shuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown
}

// Shutdown refuses new upgrades (503 server_busy), closes every connection
// with 1012 service restart, and waits until all sessions ended or ctx is done
// (remaining connections are then closed at once and ctx's error returned).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	for _, c := range s.reg.all() {
		c.closeWith("shutdown", Frame{}, CloseServiceRestart, "server_shutdown")
	}
	done := make(chan struct{})
	go func() {
		s.sessions.Wait()
		close(done)
	}()
	defer s.stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		for _, c := range s.reg.all() {
			c.fail("shutdown")
		}
		return fmt.Errorf("ws shutdown: %w", ctx.Err())
	}
}

func (s *Server) newConn(userID string, platformID int, jti string, expiresAt time.Time, operationID string) *Conn {
	id, err := uuid.NewV7()
	if err != nil { // only if the system's random source fails
		id = uuid.New()
	}
	return &Conn{
		s: s, id: id.String(), userID: userID, platformID: platformID, jti: jti,
		expiresAt: expiresAt, operationID: operationID, ctx: context.Background(),
		connectedAt: time.Now(),
	}
}
