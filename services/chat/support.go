package chat

import (
	"context"
	"time"

	lru "github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/domain"
)

// KnownUsers caches positive user lookups (a send's receiver, a single
// chat's peer); misses always ask the database. A deleted account may stay
// here for the cache's hour: the DM gate (account.DMGate), which every
// single-chat send also asks and which caches for one second, refuses it.
// Safe for concurrent use.
type KnownUsers struct {
	users Users
	seen  *lru.LRU[string, struct{}]
}

// NewKnownUsers returns the cache in front of u: up to 100,000 users, each
// remembered for an hour.
func NewKnownUsers(u Users) *KnownUsers {
	return &KnownUsers{users: u, seen: lru.NewLRU[string, struct{}](100_000, nil, time.Hour)}
}

// Exists reports whether id is a registered user: from the cache, else
// from the database (the lookup's error as is).
func (k *KnownUsers) Exists(ctx context.Context, id string) (bool, error) {
	if _, ok := k.seen.Get(id); ok {
		return true, nil
	}
	found, err := k.users.Existing(ctx, []string{id})
	if err != nil {
		return false, err
	}
	if found[id] {
		k.seen.Add(id, struct{}{})
	}
	return found[id], nil
}

type sendMetrics struct {
	latency      *prometheus.HistogramVec
	fallbacks    prometheus.Counter
	refused      prometheus.Counter
	dbDuplicates prometheus.Counter
	// lookupsOverWait: sends that went on without the duplicate check's
	// answer (two_phase.duplicate_check_wait).
	lookupsOverWait prometheus.Counter
	// lookupsSkipped: sends whose client_msg_id was recent enough for the
	// Redis record to answer any retry (recentClientMsgID).
	lookupsSkipped prometheus.Counter
}

func newSendMetrics(reg prometheus.Registerer) *sendMetrics {
	m := &sendMetrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "nexo", Name: "send_ack_seconds",
			Help:    "Time from receiving a send to its ACK, by ack_type (accepted: two-phase; saved: synchronous).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"ack_type"}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "send_sync_fallbacks_total",
			Help: "Sends that fell back to the synchronous path because Redis was unreachable.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "send_refused_busy_total",
			Help: "Sends refused with server_busy because Redis was unreachable and fail_open is false.",
		}),
		dbDuplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "send_duplicates_in_database_total",
			Help: "Sends found already saved in the database (uk_sender_client_msg) by the gateway: a retry answered from the database because Redis no longer remembered its client_msg_id, or a synchronous-path insert that met the original. The save stage counts its own in nexo_save_duplicates_total.",
		}),
		lookupsOverWait: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "send_duplicate_checks_over_wait_total",
			Help: "Two-phase sends that went on without the database's answer to the duplicate check (two_phase.duplicate_check_wait); a retry among them is still saved once, by the save stage.",
		}),
		lookupsSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "nexo", Name: "send_duplicate_checks_skipped_total",
			Help: "Sends that did not ask the database whether their client_msg_id was saved: a UUIDv7 client_msg_id made after the Redis idempotency records were last known whole and within two_phase.idempotency_ttl, whose retry the accept step answers alone.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.latency, m.fallbacks, m.refused, m.dbDuplicates, m.lookupsOverWait, m.lookupsSkipped)
	}
	return m
}

func (m *sendMetrics) observe(ackType string, d time.Duration) {
	m.latency.WithLabelValues(ackType).Observe(d.Seconds())
}

// placeholderFor fills the seqs of [begin, end] that have no readable
// message with placeholders, keeping ascending order, at most limit entries.
func fillRange(msgs []domain.Message, begin, end int64, limit int) []MessageJSON {
	out := make([]MessageJSON, 0, min(int(end-begin+1), limit))
	i := 0
	for seq := begin; seq <= end && len(out) < limit; seq++ {
		if i < len(msgs) && msgs[i].Seq == seq {
			out = append(out, ToJSON(&msgs[i]))
			i++
			continue
		}
		out = append(out, Placeholder(seq))
	}
	return out
}
