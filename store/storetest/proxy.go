package storetest

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/store"
)

// Proxy is a TCP proxy to a real backend that a test can take down and
// bring back, to exercise "MySQL/Redis unreachable" against the real
// server rather than a fake.
type Proxy struct {
	target string
	ln     net.Listener
	addr   string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

// NewProxy listens on a free loopback port and forwards to target; it is
// closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, ln: ln, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() { _ = ln.Close(); p.Down() })
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Down drops every open connection and refuses new ones until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
}

// Up lets connections through again.
func (p *Proxy) Up() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		go p.pipe(c)
	}
}

func (p *Proxy) pipe(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		_ = c.Close()
		_ = u.Close()
		return
	}
	p.conns[u] = struct{}{}
	p.mu.Unlock()
	go func() { _, _ = io.Copy(u, c); _ = u.Close(); _ = c.Close() }()
	_, _ = io.Copy(c, u)
	_ = u.Close()
	_ = c.Close()
}

// MySQLBehindProxy opens a fresh, migrated MariaDB database reached through
// a Proxy, so the test can make the database unreachable.
func MySQLBehindProxy(t testing.TB) (*store.DB, *Proxy) {
	t.Helper()
	dsn := MySQLDSN(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := NewProxy(t, cfg.Addr)
	cfg.Addr = p.Addr()
	cfg.Timeout = 2 * time.Second
	cfg.ReadTimeout = 5 * time.Second
	cfg.WriteTimeout = 5 * time.Second
	db, err := store.OpenMySQL(context.Background(), configs.MySQL{DSN: cfg.FormatDSN(), MaxOpenConns: 8, MaxIdleConns: 4, ConnMaxLifetime: time.Hour})
	if err != nil {
		t.Fatalf("open test database behind proxy: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db, p
}
