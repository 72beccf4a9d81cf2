package sync

import (
	"context"
	"log/slog"
	"sort"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// CursorStore reads and advances cursors (store.CursorRepo). Advance has
// GREATEST semantics: a value below the stored one changes nothing.
type CursorStore interface {
	Load(ctx context.Context, keys []store.CursorKey) (map[store.CursorKey]domain.Cursor, error)
	Advance(ctx context.Context, cursors []domain.Cursor) (statements int, err error)
}

// Move is one cursor a flush took ACKs for: its values before and after,
// and the highest values the ACKs asked for (0 = none). Cursors the ACKs
// did not move are reported too: a member's own message moves its read
// cursor in the save, and its next ACK, whatever its seq, is how the other
// party learns of that read.
type Move struct {
	UserID         string
	ConversationID string
	FromDelivered  int64
	ToDelivered    int64
	FromRead       int64
	ToRead         int64
	AckedDelivered int64
	AckedRead      int64
	// DeliveredAt and ReadAt are when (Unix ms) the ACK that asked for
	// AckedDelivered / AckedRead arrived; Source is the connection of the
	// latest ACK.
	DeliveredAt int64
	ReadAt      int64
	Source      AckSource
}

// AckSource is the connection an ACK came over, for the cursor audit
// line: ConnID is "" for HTTP (mark_read), PlatformID 0 when unknown.
type AckSource struct {
	PlatformID int
	ConnID     string
}

// MoveSink learns of the cursors a flush took ACKs for, after they are
// written (Receipts).
type MoveSink interface {
	Moved(ctx context.Context, moves []Move)
}

// targets is what a member has acknowledged of a conversation, when each
// value was first asked for (Unix ms), and over which connection (the
// latest ACK's).
type targets struct {
	delivered, read     int64
	deliveredAt, readAt int64
	src                 AckSource
}

// merge returns t raised by the newer o: higher values win and keep their
// own time (an equal value keeps t's, the first ACK that asked for it);
// o's source wins.
func (t targets) merge(o targets) targets {
	if o.delivered > t.delivered {
		t.delivered, t.deliveredAt = o.delivered, o.deliveredAt
	}
	if o.read > t.read {
		t.read, t.readAt = o.read, o.readAt
	}
	if o.src != (AckSource{}) {
		t.src = o.src
	}
	return t
}

// CursorWriter coalesces cursor advances: every ACK is merged in memory
// into its (member, conversation) entry, and within cursor_flush_interval
// of the first one all entries are written at once — one multi-row upsert
// per 500 entries, skipping those the database already holds — so a burst
// of ACKs costs one row per member and conversation. A flush reads the
// stored cursors first (one query) to know which moved and from where,
// which drives the receipts. Reads in this process overlay the entries not
// yet written (Overlay), so a client reads its own ACKs at once; another
// process sees them within the window. An advance not yet flushed when the
// process dies is lost: clients ACK again (repeats are harmless).
type CursorWriter struct {
	store   CursorStore
	sink    MoveSink
	window  time.Duration
	log     *slog.Logger
	metrics *cursorMetrics
	timing  *cursorTiming // latency histograms and audit lines of the moves

	mu       gosync.Mutex
	pending  map[store.CursorKey]targets
	inflight map[store.CursorKey]targets // being written: still overlaid
	// written and wroteBefore hold what the flushes of the current and the
	// previous generation (recentlyWritten each) wrote: a read whose
	// database query ran before a flush committed and whose Overlay runs
	// after it still sees the advance.
	written, wroteBefore map[store.CursorKey]targets
	generationAt         time.Time
	kick                 chan struct{}

	flushMu gosync.Mutex // one flush at a time
	stats   CursorStats
}

// CursorStats counts the writer's work since it started.
type CursorStats struct {
	Advances   atomic.Int64 // Advance calls (ACKs)
	Flushes    atomic.Int64 // flushes that had something pending
	Statements atomic.Int64 // upsert statements written
	Rows       atomic.Int64 // cursor rows written
}

// recentlyWritten is one generation of written advances: they stay
// overlaid 1–2 s after their flush, far longer than one read's query, even
// on a loaded machine.
const recentlyWritten = time.Second

// shutdownFlush bounds the last flush when the writer stops.
const shutdownFlush = 5 * time.Second

// maxRetryWait caps the wait between flushes that fail (database down).
const maxRetryWait = 5 * time.Second

// CursorWriterDeps are the CursorWriter's collaborators and settings.
type CursorWriterDeps struct {
	Store CursorStore
	// Sink hears of every flush's moves (Receipts); nil: no receipts.
	Sink MoveSink
	// Window is gosync.cursor_flush_interval.
	Window time.Duration
	// Saved finds when the messages cursors moved to were saved, for the
	// saved → delivered histogram and the audit lines' server_msg_id
	// (store.ConversationRepo); nil: neither.
	Saved    SavedLookup
	Audit    *domain.Audit // nil: no cursor audit lines
	Registry prometheus.Registerer
	Log      *slog.Logger
}

// NewCursorWriter returns the writer.
func NewCursorWriter(d CursorWriterDeps) *CursorWriter {
	return &CursorWriter{store: d.Store, sink: d.Sink, window: d.Window, log: d.Log, metrics: newCursorMetrics(d.Registry),
		timing:  newCursorTiming(d.Saved, d.Audit, d.Registry, d.Log),
		pending: map[store.CursorKey]targets{}, written: map[store.CursorKey]targets{}, kick: make(chan struct{}, 1)}
}

// Advance records that userID's client holds conversationID up to
// delivered and has read up to read (either may be 0), over the
// connection src; read also advances delivered. It never blocks on I/O.
// Validation (membership, bad_seq) is the caller's.
func (w *CursorWriter) Advance(userID, conversationID string, delivered, read int64, src AckSource) {
	delivered = max(delivered, read)
	now := time.Now().UnixMilli()
	k := store.CursorKey{UserID: userID, ConversationID: conversationID}
	w.mu.Lock()
	w.pending[k] = w.pending[k].merge(targets{delivered: delivered, read: read, deliveredAt: now, readAt: now, src: src})
	first := len(w.pending) == 1
	w.mu.Unlock()
	w.stats.Advances.Add(1)
	w.metrics.acks.Inc()
	if first {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// Overlay raises c's DeliveredSeq and ReadSeq to the advances of c's user
// and conversation not written yet, or written within the last 1–2 s (c
// may have been read from the database just before they were committed).
func (w *CursorWriter) Overlay(c *domain.Cursor) {
	k := store.CursorKey{UserID: c.UserID, ConversationID: c.ConversationID}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range []map[store.CursorKey]targets{w.wroteBefore, w.written, w.inflight, w.pending} {
		if t, ok := m[k]; ok {
			c.DeliveredSeq, c.ReadSeq = max(c.DeliveredSeq, t.delivered), max(c.ReadSeq, t.read)
		}
	}
}

// Stats returns the writer's counters.
func (w *CursorWriter) Stats() *CursorStats { return &w.stats }

// Run flushes one window after the first advance that finds nothing
// pending, until ctx is done; then it flushes what is left (bounded by 5 s)
// and returns nil. A failed flush keeps its advances and is retried with a
// growing wait (up to 5 s).
func (w *CursorWriter) Run(ctx context.Context) error {
	retry := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return w.Close(context.WithoutCancel(ctx))
		case <-w.kick:
		}
		wait := max(w.window, retry)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return w.Close(context.WithoutCancel(ctx))
		case <-t.C:
		}
		if err := w.Flush(ctx); err != nil {
			retry = min(max(2*retry, 100*time.Millisecond), maxRetryWait)
			w.log.Warn("cursor flush failed; retrying", "err", err, "retry_in", retry)
			continue
		}
		retry = 0
	}
}

// Close writes what is pending (bounded by 5 s); call it after the
// gateways stopped taking ACKs. It returns the flush's error.
func (w *CursorWriter) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, shutdownFlush)
	defer cancel()
	if err := w.Flush(ctx); err != nil {
		w.log.Error("last cursor flush failed; clients will ACK again", "err", err)
		return err
	}
	return nil
}

// Flush writes every pending advance now: one read of the stored cursors,
// one upsert per 500 that move, then every cursor it took ACKs for goes to
// the sink (moved or not). On error
// the advances stay pending.
func (w *CursorWriter) Flush(ctx context.Context) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	batch := w.pending
	if len(batch) == 0 {
		w.mu.Unlock()
		return nil
	}
	w.pending, w.inflight = map[store.CursorKey]targets{}, batch
	w.mu.Unlock()
	w.stats.Flushes.Add(1)
	w.metrics.flushes.Inc()

	moves, err := w.write(ctx, batch)
	if err != nil {
		w.metrics.errors.Inc()
		w.timing.failed(ctx, batch, err)
		w.requeue(batch)
		return err
	}
	w.mu.Lock()
	w.inflight = nil
	if now := time.Now(); now.Sub(w.generationAt) > recentlyWritten {
		w.wroteBefore, w.written, w.generationAt = w.written, map[store.CursorKey]targets{}, now
	}
	for k, t := range batch {
		w.written[k] = t.merge(w.written[k])
	}
	w.mu.Unlock()
	w.timing.moved(ctx, moves)
	if w.sink != nil && len(moves) > 0 {
		w.sink.Moved(ctx, moves)
	}
	return nil
}

func (w *CursorWriter) write(ctx context.Context, batch map[store.CursorKey]targets) ([]Move, error) {
	keys := make([]store.CursorKey, 0, len(batch))
	for k := range batch {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].UserID < keys[j].UserID || keys[i].UserID == keys[j].UserID && keys[i].ConversationID < keys[j].ConversationID
	})
	stored, err := w.store.Load(ctx, keys)
	if err != nil {
		return nil, err
	}
	var rows []domain.Cursor
	var moves []Move
	for _, k := range keys {
		t, old := batch[k], stored[k]
		mv := Move{UserID: k.UserID, ConversationID: k.ConversationID,
			FromDelivered: old.DeliveredSeq, ToDelivered: max(old.DeliveredSeq, t.delivered),
			FromRead: old.ReadSeq, ToRead: max(old.ReadSeq, t.read), AckedDelivered: t.delivered, AckedRead: t.read,
			DeliveredAt: t.deliveredAt, ReadAt: t.readAt, Source: t.src}
		moved := mv.ToDelivered != mv.FromDelivered || mv.ToRead != mv.FromRead
		if moved {
			rows = append(rows, domain.Cursor{UserID: k.UserID, ConversationID: k.ConversationID,
				DeliveredSeq: mv.ToDelivered, ReadSeq: mv.ToRead})
		}
		moves = append(moves, mv)
	}
	if len(rows) == 0 {
		return moves, nil
	}
	n, err := w.store.Advance(ctx, rows)
	w.stats.Statements.Add(int64(n))
	w.metrics.statements.Add(float64(n))
	if err != nil {
		return nil, err
	}
	w.stats.Rows.Add(int64(len(rows)))
	w.metrics.rows.Add(float64(len(rows)))
	return moves, nil
}

// requeue merges a batch that could not be written back into pending.
func (w *CursorWriter) requeue(batch map[store.CursorKey]targets) {
	w.mu.Lock()
	for k, t := range batch {
		w.pending[k] = t.merge(w.pending[k]) // the ACKs since are newer
	}
	w.inflight = nil
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

type cursorMetrics struct {
	acks, flushes, statements, rows, errors prometheus.Counter
}

func newCursorMetrics(reg prometheus.Registerer) *cursorMetrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nexo", Name: name, Help: help})
	}
	m := &cursorMetrics{
		acks:       c("cursor_advances_total", "Delivered/read advances (client ACKs, mark_read) taken by the cursor writer."),
		flushes:    c("cursor_flushes_total", "Cursor flushes that had advances pending."),
		statements: c("cursor_write_statements_total", "Upsert statements the cursor writer ran."),
		rows:       c("cursor_rows_written_total", "Cursor rows the cursor writer moved."),
		errors:     c("cursor_flush_errors_total", "Cursor flushes that failed (retried)."),
	}
	if reg != nil {
		reg.MustRegister(m.acks, m.flushes, m.statements, m.rows, m.errors)
	}
	return m
}
