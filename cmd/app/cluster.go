package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/api"
	"github.com/nexo-im/nexo/gateway/cluster"
	"github.com/nexo-im/nexo/gateway/wire"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// buildMembership registers this process as a cluster instance
// (docs/cluster.md): cluster.instance_id, else host name + "-" + the bound
// HTTP port. A start while another live process holds the id fails; a
// restart after a crash waits out its own stale heartbeat first.
func (a *App) buildMembership(ctx context.Context) error {
	id := a.cfg.Cluster.InstanceID
	if id == "" {
		id = defaultInstanceID(a.listener.Addr())
	}
	inst := store.NewInstances(a.rdb, a.keys, a.cfg.Cluster.InstanceTTL)
	a.member = store.NewMembership(inst, store.Instance{ID: id, Boot: store.NewBootToken(), Addr: a.listener.Addr().String()},
		a.cfg.Cluster.HeartbeatInterval, func() int {
			if a.ws == nil {
				return 0
			}
			return a.ws.ConnCount()
		}, a.log)
	if err := a.member.Start(ctx); err != nil {
		return fmt.Errorf("cluster.instance_id %q (NEXO_CLUSTER_INSTANCE_ID): %w", id, err)
	}
	a.log.Info("cluster member", "instance_id", id, "epoch", a.member.Self().Epoch, "live", len(a.member.Live()))
	member := a.member
	a.add(component{name: "cluster membership", run: member.Run, stop: member.Leave})
	return nil
}

// defaultInstanceID is the host name and the bound port, e.g. "web1-8080":
// unique per process on a host, stable across its restarts.
func defaultInstanceID(addr net.Addr) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "nexo"
	}
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, host)
	port := "0"
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port = fmt.Sprint(tcp.Port)
	}
	id := host + "-" + port
	if len(id) > 64 {
		id = id[len(id)-64:]
	}
	return id
}

// buildRelay builds the cluster's ws.Registry (gateway/cluster) over the
// local WebSocket hub: every push of every kind and every session event
// goes through it. The bus is GoChannel in the embedded default (one
// process), else cluster.bus. The inbox is subscribed here, before
// serving, and the other instances are told this one joined.
func (a *App) buildRelay(ctx context.Context) error {
	bus, err := a.openBus(ctx)
	if err != nil {
		return err
	}
	a.add(component{name: "cluster bus", stop: func(context.Context) error { return bus.Close() }})
	a.presence = store.NewPresence(a.rdb, a.keys, a.member.Incarnation(), a.cfg.WS.PresenceTTL).WithLive(a.member.IsLive)
	relay, err := cluster.NewRelay(cluster.Deps{Local: a.ws, Presence: a.presence, Membership: a.member, Bus: bus,
		MaxAge: a.cfg.Cluster.InboxMaxAge, Log: a.log, Metrics: a.metrics})
	if err != nil {
		return err
	}
	if err := relay.Start(ctx); err != nil {
		return err
	}
	a.relay = relay
	a.add(component{name: "cluster inbox", run: relay.Run})
	return nil
}

// openBus opens the bus cluster.bus names (GoChannel when embedded). The
// Redis bus gets two clients of its own: watermill closes what it is given.
func (a *App) openBus(ctx context.Context) (*streams.Bus, error) {
	c := a.cfg.Cluster
	switch {
	case a.embedded:
		return streams.NewGoChannelBus(a.log), nil
	case c.Bus == configs.BusNATS:
		return streams.NewNATSBus(c.NATSURL, a.keys.Prefix, c.InboxMaxAge, c.InboxMaxLen, a.log)
	}
	pub, err := store.OpenRedis(ctx, a.cfg.Redis, nil)
	if err != nil {
		return nil, err
	}
	sub, err := store.OpenRedis(ctx, a.cfg.Redis, nil)
	if err != nil {
		_ = pub.Close()
		return nil, err
	}
	bus, err := streams.NewRedisBus(ctx, pub, sub, a.keys.Prefix, a.member.Self().ID, c.InboxMaxLen, a.log)
	if err != nil {
		_, _ = pub.Close(), sub.Close()
		return nil, err
	}
	return bus, nil
}

// DisconnectUser ends every session of userID on every instance: each
// connection gets a 3001 frame carrying e (reason and detail) and a close
// 1008, here at once and on the other instances within the bus latency
// (well under 1 s). For the server API's user disable.
func (a *App) DisconnectUser(ctx context.Context, userID string, e *wire.Error) {
	a.relay.DisconnectUser(ctx, userID, e)
}

// ClusterJSON is the answer of GET /admin/cluster.
type ClusterJSON struct {
	Self      string            `json:"self"`
	Bus       string            `json:"bus"`
	Instances []ClusterInstance `json:"instances"`
}

// ClusterInstance is one live instance in GET /admin/cluster. Times are
// Unix milliseconds; connections is the count at its last heartbeat.
type ClusterInstance struct {
	store.Instance
	// Shards are the stream shards it owns (empty until shard ownership
	// reports them through App.shardsOf).
	Shards []int `json:"shards"`
}

// adminCluster answers GET /admin/cluster: the live instances read from
// Redis now (not the cache). It needs "Authorization: Bearer <admin.token>".
func (a *App) adminCluster(ctx context.Context, c *app.RequestContext) {
	if !adminAuthorized(a.cfg.Admin.Token, c.GetHeader("Authorization")) {
		api.WriteError(ctx, c, a.log, wire.NewError(wire.ReasonForbidden, "admin endpoints need Authorization: Bearer <admin.token>"))
		return
	}
	if err := a.member.Refresh(ctx); err != nil {
		api.WriteError(ctx, c, a.log, err)
		return
	}
	var shards map[string][]int
	if a.shardsOf != nil {
		shards = a.shardsOf(ctx)
	}
	out := ClusterJSON{Self: a.member.Self().ID, Bus: a.busName(), Instances: []ClusterInstance{}}
	for _, in := range a.member.Live() {
		s := shards[in.ID]
		if s == nil {
			s = []int{}
		}
		out.Instances = append(out.Instances, ClusterInstance{Instance: in, Shards: s})
	}
	api.WriteOK(c, out)
}

func (a *App) busName() string {
	if a.embedded {
		return "gochannel"
	}
	return a.cfg.Cluster.Bus
}
