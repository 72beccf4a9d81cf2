package sync

import (
	"context"
	"log/slog"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// SavedLookup finds when messages were saved: by (conversation, seq), the
// server_msg_id and messages.created_at (store.ConversationRepo.Saved).
// Seqs not saved (yet) are absent.
type SavedLookup interface {
	Saved(ctx context.Context, keys []store.SeqKey) (map[store.SeqKey]store.SavedRef, error)
}

// reachedMemory bounds how many members' last delivered advance the writer
// remembers for the delivered → read histogram (about 100 bytes each).
const reachedMemory = 1 << 16

// reach is one delivered advance: the cursor went from from to to at at
// (Unix ms, when the ACK that asked for to arrived).
type reach struct{ from, to, at int64 }

// cursorTiming turns a flush's moves into the latency histograms and the
// cursor audit lines (docs/operations.md). It runs under the writer's
// flush lock: one flush at a time.
//
//   - saved → delivered: when the member's ACK moved its delivered cursor
//     to seq, minus when the message at seq was saved. It costs one
//     indexed query per flush that moved a cursor (SavedLookup), not one
//     per ACK; a seq not saved yet at the flush (deliver_before_saved) is
//     not observed, one saved after its ACK counts as 0.
//   - delivered → read: when the ACK that moved the read cursor to seq
//     arrived, minus when the delivered cursor reached seq. The delivered
//     time is not stored: it is remembered in memory, per member and
//     conversation, for the last delivered advance this instance wrote
//     (reachedMemory of them). A read of a seq that advance does not
//     cover (an older seq; a delivered ACK handled by another instance or
//     before a restart) is not observed. A read ACK that itself moved the
//     delivered cursor past seq counts as 0 (delivered and read at once).
type cursorTiming struct {
	saved   SavedLookup
	audit   *domain.Audit
	log     *slog.Logger
	reached *lru.Cache[store.CursorKey, reach]

	savedToDelivered prometheus.Histogram
	deliveredToRead  prometheus.Histogram
}

func newCursorTiming(saved SavedLookup, audit *domain.Audit, reg prometheus.Registerer, log *slog.Logger) *cursorTiming {
	reached, _ := lru.New[store.CursorKey, reach](reachedMemory) // size > 0: no error
	// From 1 ms to a day: a member offline for hours is in the same
	// histogram as one online.
	buckets := prometheus.ExponentialBucketsRange(0.001, 86400, 24)
	t := &cursorTiming{saved: saved, audit: audit, log: log, reached: reached,
		savedToDelivered: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "nexo", Name: "saved_to_delivered_seconds",
			Help: "From a message's save (messages.created_at) to the member's ACK that moved its delivered cursor to the message's seq; " +
				"one observation per delivered-cursor move, for the seq it moved to.", Buckets: buckets}),
		deliveredToRead: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "nexo", Name: "delivered_to_read_seconds",
			Help: "From a member's delivered cursor reaching a seq to its read cursor reaching it (the ACK times); one observation per " +
				"read-cursor move whose seq this instance saw delivered (docs/operations.md).", Buckets: buckets}),
	}
	if reg != nil {
		reg.MustRegister(t.savedToDelivered, t.deliveredToRead)
	}
	return t
}

// moved observes the latencies of moves (written) and writes their audit
// lines.
func (t *cursorTiming) moved(ctx context.Context, moves []Move) {
	var keys []store.SeqKey
	for _, mv := range moves {
		if mv.ToDelivered > mv.FromDelivered {
			keys = append(keys, store.SeqKey{ConversationID: mv.ConversationID, Seq: mv.ToDelivered})
		}
		if mv.ToRead > mv.FromRead && (mv.ToRead != mv.ToDelivered || mv.ToDelivered == mv.FromDelivered) {
			keys = append(keys, store.SeqKey{ConversationID: mv.ConversationID, Seq: mv.ToRead})
		}
	}
	var saved map[store.SeqKey]store.SavedRef
	if t.saved != nil && len(keys) > 0 {
		var err error
		if saved, err = t.saved.Saved(ctx, keys); err != nil {
			t.log.Debug("cursor flush: saved times not read; latencies of this flush not observed", "err", err)
		}
	}
	for i := range moves {
		mv := &moves[i]
		k := store.CursorKey{UserID: mv.UserID, ConversationID: mv.ConversationID}
		if mv.ToDelivered > mv.FromDelivered {
			if ref, ok := saved[store.SeqKey{ConversationID: mv.ConversationID, Seq: mv.ToDelivered}]; ok {
				t.savedToDelivered.Observe(seconds(mv.DeliveredAt - ref.SavedAt))
			}
			t.reached.Add(k, reach{from: mv.FromDelivered, to: mv.ToDelivered, at: mv.DeliveredAt})
		}
		if mv.ToRead > mv.FromRead {
			if r, ok := t.reached.Get(k); ok && r.from < mv.ToRead && mv.ToRead <= r.to {
				t.deliveredToRead.Observe(seconds(mv.ReadAt - r.at))
			}
		}
		if t.audit.On(ctx) {
			t.auditMove(ctx, mv, saved)
		}
	}
}

// auditMove writes a move's cursor lines: one for the read ACK, one for a
// delivered ACK beyond it.
func (t *cursorTiming) auditMove(ctx context.Context, mv *Move, saved map[store.SeqKey]store.SavedRef) {
	line := func(ackType domain.AckType, acked, from, to int64) {
		attrs := append(domain.AuditConn(mv.UserID, mv.Source.PlatformID, mv.Source.ConnID),
			slog.String("conversation_id", mv.ConversationID), slog.Int64("seq", acked), slog.String("ack_type", string(ackType)))
		if ref, ok := saved[store.SeqKey{ConversationID: mv.ConversationID, Seq: to}]; ok && to > from {
			attrs = append(attrs, slog.String("server_msg_id", ref.ServerMsgID))
		}
		t.audit.OK(ctx, "cursor", append(attrs, domain.AuditCursor(from, to)...)...)
	}
	if mv.AckedRead > 0 {
		line(domain.AckRead, mv.AckedRead, mv.FromRead, mv.ToRead)
	}
	if mv.AckedDelivered > mv.AckedRead {
		line(domain.AckDelivered, mv.AckedDelivered, mv.FromDelivered, mv.ToDelivered)
	}
}

// failed writes a warn line per cursor of a flush that failed (its
// advances stay pending and are retried).
func (t *cursorTiming) failed(ctx context.Context, batch map[store.CursorKey]targets, err error) {
	if t.audit == nil {
		return
	}
	for k, tg := range batch {
		t.audit.Fail(ctx, "cursor", err, append(domain.AuditConn(k.UserID, tg.src.PlatformID, tg.src.ConnID),
			slog.String("conversation_id", k.ConversationID), slog.Int64("seq", tg.delivered))...)
	}
}

// seconds converts a span in ms to seconds, 0 for a negative one (clocks
// of two instances, or a message saved after it was delivered).
func seconds(ms int64) float64 { return float64(max(ms, 0)) / 1000 }
