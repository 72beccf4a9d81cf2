package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// webPlatform is the platform_id of the bench's message-scenario sessions
// (5, Web). The connect scenario uses all ten.
const webPlatform = 5

// topology is the set-up world of a run: accounts, groups, sessions, and
// who sends to whom. It outlives runs, so --compare alternates runs over
// the same connections.
type topology struct {
	api     *api
	clk     *clock
	handler frameHandler
	o       *options
	prefix  string

	conns   []*conn // every session, in creation order
	senders []*sender
	groups  []createdGroup
	tokens  []string
}

type createdGroup struct{ id, ownerToken string }

// newPrefix returns o.Prefix, or a fresh random one ("nb" + 8 hex digits).
func newPrefix(o *options) (prefix string, reuse bool) {
	if o.Prefix != "" {
		return o.Prefix, true
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "nb" + hex.EncodeToString(b), false
}

// parallel runs fn(i) for i in [0, n) with at most limit at once and
// returns the first error.
func parallel(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(limit, 1))
	for i := 0; i < n; i++ {
		g.Go(func() error { return fn(gctx, i) })
	}
	return g.Wait()
}

// accounts registers users (tolerating existing ones when the prefix is
// reused) and logs each in on platform, returning one session per user.
func (t *topology) accounts(ctx context.Context, ids []string, platform int) ([]*conn, error) {
	reuse := t.o.Prefix != ""
	conns := make([]*conn, len(ids))
	err := parallel(ctx, len(ids), t.o.SetupConcurrency, func(ctx context.Context, i int) error {
		if err := t.api.register(ctx, ids[i], t.o.Password, reuse); err != nil {
			return fmt.Errorf("register %s: %w", ids[i], err)
		}
		tok, err := t.api.login(ctx, ids[i], t.o.Password, platform)
		if err != nil {
			return fmt.Errorf("login %s: %w", ids[i], err)
		}
		conns[i] = &conn{user: ids[i], platform: platform, token: tok, handler: t.handler, clk: t.clk, recv: newReceiver()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, c := range conns {
		c.idx = len(t.conns)
		t.conns = append(t.conns, c)
		t.tokens = append(t.tokens, c.token)
	}
	return conns, nil
}

// dialAll opens every session.
func (t *topology) dialAll(ctx context.Context, conns []*conn) error {
	return parallel(ctx, len(conns), t.o.DialConcurrency, func(ctx context.Context, i int) error {
		if err := conns[i].dial(ctx, t.api); err != nil {
			return fmt.Errorf("connect %s: %w", conns[i].user, err)
		}
		return nil
	})
}

// buildSingle sets up o.Pairs sender -> receiver pairs.
func (t *topology) buildSingle(ctx context.Context) error {
	ids := make([]string, 0, 2*t.o.Pairs)
	for i := 0; i < t.o.Pairs; i++ {
		ids = append(ids, fmt.Sprintf("%s-s%d", t.prefix, i), fmt.Sprintf("%s-r%d", t.prefix, i))
	}
	conns, err := t.accounts(ctx, ids, webPlatform)
	if err != nil {
		return err
	}
	for i := 0; i < len(conns); i += 2 {
		s, r := conns[i], conns[i+1]
		to := &target{conv: singleConversationID(s.user, r.user), sessionType: sessionSingle, recvID: r.user, recipients: []*conn{r}}
		t.senders = append(t.senders, &sender{conns: []*conn{s}, to: to})
		if t.o.Place != nil {
			s.base, r.base = t.o.Place(s.user, r.user)
		}
	}
	return t.dialAll(ctx, conns)
}

// buildGroup sets up o.Groups groups of o.Members members; the first
// ceil(members × online-share) of each group connect and take turns
// sending.
func (t *topology) buildGroup(ctx context.Context) error {
	online := min(t.o.Members, max(2, int(math.Ceil(float64(t.o.Members)*t.o.OnlineShare))))
	var ids []string
	for g := 0; g < t.o.Groups; g++ {
		for m := 0; m < t.o.Members; m++ {
			ids = append(ids, fmt.Sprintf("%s-g%dm%d", t.prefix, g, m))
		}
	}
	conns, err := t.accounts(ctx, ids, webPlatform)
	if err != nil {
		return err
	}
	t.groups = make([]createdGroup, t.o.Groups)
	err = parallel(ctx, t.o.Groups, t.o.SetupConcurrency, func(ctx context.Context, g int) error {
		members := conns[g*t.o.Members : (g+1)*t.o.Members]
		others := make([]string, 0, len(members)-1)
		for _, c := range members[1:] {
			others = append(others, c.user)
		}
		id, err := t.api.createGroup(ctx, members[0].token, fmt.Sprintf("%s group %d", t.prefix, g), others)
		if err != nil {
			return fmt.Errorf("create group %d: %w", g, err)
		}
		t.groups[g] = createdGroup{id: id, ownerToken: members[0].token}
		return nil
	})
	if err != nil {
		return err
	}
	var dial []*conn
	for g, grp := range t.groups {
		on := conns[g*t.o.Members : g*t.o.Members+online]
		to := &target{conv: groupConversationID(grp.id), sessionType: sessionGroup, groupID: grp.id, recipients: on}
		t.senders = append(t.senders, &sender{conns: on, to: to})
		dial = append(dial, on...)
	}
	// Only the online members keep a session; the others' tokens are
	// revoked at teardown like everyone's.
	return t.dialAll(ctx, dial)
}

// online returns the sessions that are open.
func (t *topology) online() []*conn {
	var out []*conn
	for _, c := range t.conns {
		if c.ws != nil {
			out = append(out, c)
		}
	}
	return out
}

// resetReceivers gives every session a fresh receive-side state before a
// run, so one run's counters never leak into the next.
func (t *topology) resetReceivers() {
	for _, c := range t.conns {
		c.recv = newReceiver()
		c.resumedAt.Store(0)
	}
}

// teardown closes sessions and, unless o.Keep, dismisses the groups and
// logs every token out. The API has no way to delete a user: accounts stay
// (reuse them with --prefix).
func (t *topology) teardown(ctx context.Context) (warnings []string) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, c := range t.conns {
		if c.ws == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c.close()
		}()
	}
	wg.Wait()
	if t.o.Keep {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	note := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(warnings) < 5 {
			warnings = append(warnings, fmt.Sprintf(format, args...))
		}
	}
	_ = parallel(ctx, len(t.groups), t.o.SetupConcurrency, func(ctx context.Context, i int) error {
		if err := t.api.dismissGroup(ctx, t.groups[i].ownerToken, t.groups[i].id); err != nil {
			note("dismiss group %s: %v", t.groups[i].id, err)
		}
		return nil
	})
	_ = parallel(ctx, len(t.tokens), t.o.SetupConcurrency, func(ctx context.Context, i int) error {
		if err := t.api.logout(ctx, t.tokens[i]); err != nil {
			note("logout: %v", err)
		}
		return nil
	})
	return warnings
}
