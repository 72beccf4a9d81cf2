package workers

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// MessageSaver persists messages (store.MessageRepo).
type MessageSaver interface {
	SaveBatch(ctx context.Context, msgs []domain.Message) ([]store.SaveResult, error)
	SaveFailed(ctx context.Context, m domain.Message) error
}

// Resequencer leases the fresh seq of a message whose seq turned out
// taken (store.SeqRepo), for store.Resequence.
type Resequencer interface {
	Lease(ctx context.Context, conversationID string, block int64) (domain.SeqLease, error)
}

// AllocatorRetirer keeps the Redis allocator above seqs issued around it
// (streams.Accepter), for store.Resequence.
type AllocatorRetirer interface {
	Retire(ctx context.Context, conversationID string, seq int64) error
}

// AfterSave hears of the messages of a batch once they are in the
// database and before the batch is acknowledged (search, offline push,
// webhook after_send and group_changed, media references) and returns the
// entries to add to later stages' queues: the batch's commit adds them in
// its atomic step (streams.Commit.Appends). An error retries the batch, so
// it hears of every message at least once; fresh[i] is false for a message
// saved before (a redelivery).
type AfterSave interface {
	AfterSave(ctx context.Context, msgs []domain.Message, fresh []bool) ([]streams.Append, error)
}

// SavedDeliverer pushes saved save-first messages from the save stage
// itself (DeliverHandler.DeliverSaved), sparing each a stream write, a read
// and a commit; it returns the entries still to forward to to_deliver.
type SavedDeliverer interface {
	DeliverSaved(ctx context.Context, shard int, entries []streams.Entry) []streams.Entry
}

// SavedAccepts hears which messages of a shard are now in the database
// (streams.Accepter.Saved: the lost-message check stops remembering them).
type SavedAccepts interface {
	Saved(shard int, serverMsgIDs []string)
}

// SaveHandler is the save stage: it persists a batch of entries from one
// shard's to_save stream in one transaction, pushes save-first entries to
// their recipients (SaveDeps.Deliver; without it, or for the entries it
// returns, they are forwarded to to_deliver), then in one atomic Redis step
// forwards, adds the after-save hooks' queue entries, marks idempotency
// records saved and acknowledges the batch, and only then pushes
// ACK(saved).
type SaveHandler struct {
	keys      streams.Keys
	rdb       redis.UniversalClient
	msgs      MessageSaver
	seqs      Resequencer
	alloc     AllocatorRetirer
	push      Pusher
	metrics   *Metrics
	log       *slog.Logger
	limited   *domain.RateLog // dead-letter and retry lines (newDeadLines)
	after     AfterSave
	offenders DeadSenders
	deliver   SavedDeliverer
	accepts   SavedAccepts
}

// SaveDeps are the SaveHandler's collaborators.
type SaveDeps struct {
	Keys      streams.Keys
	Redis     redis.UniversalClient
	Messages  MessageSaver
	Seqs      Resequencer
	Allocator AllocatorRetirer
	Pusher    Pusher
	Metrics   *Metrics
	Log       *slog.Logger
	// BatchWait and BatchSize (save.batch_wait, save.batch_size): a save
	// batch that finds no other being saved waits up to BatchWait for the
	// other shards' batches, unless BatchSize messages are already waiting.
	BatchWait time.Duration
	BatchSize int
	// After, when set, hears of saved messages before each commit.
	After AfterSave
	// DeadSenders, when set, hears of every user message dead-lettered,
	// by sender (the repeat-offender limit, store.DeadSenders).
	DeadSenders DeadSenders
	// Deliver, when set, pushes saved messages from the save stage
	// (the shard's deliver stage, DeliverHandler); nil forwards every
	// save-first entry to to_deliver.
	Deliver SavedDeliverer
	// Accepts, when set, hears of each batch's saved messages right after
	// their transaction (streams.Accepter, for its lost-message check).
	Accepts SavedAccepts
}

// DeadSenders counts a sender's dead-lettered messages and reports whether
// the sender is now blocked (store.DeadSenders).
type DeadSenders interface {
	DeadLetter(ctx context.Context, sender string) (bool, error)
}

var _ DeadLetterHooks = (*SaveHandler)(nil)

// NewSaveHandler returns the save stage.
func NewSaveHandler(d SaveDeps) *SaveHandler {
	return &SaveHandler{
		keys: d.Keys, rdb: d.Redis, msgs: newGroupSaver(d.Messages, d.BatchWait, d.BatchSize), seqs: d.Seqs, alloc: d.Allocator, push: d.Pusher,
		metrics: d.Metrics, log: d.Log, limited: newDeadLines(d.Log), after: d.After, offenders: d.DeadSenders,
		deliver: d.Deliver, accepts: d.Accepts,
	}
}

// Handle saves one batch of shard's to_save stream. It returns
// streams.Failures for entries that failed on their own (malformed, or a
// row the database refuses), the rest being committed; any other error
// when the batch must be retried as a whole (the database is unreachable,
// a deadlock, Redis failed at commit): everything it did is idempotent.
func (h *SaveHandler) Handle(ctx context.Context, shard int, batch []redis.XMessage) error {
	ctx = store.WithOpCounter(ctx, h.metrics.Ops(streams.GroupSave))
	h.metrics.StageMessages.WithLabelValues(streams.GroupSave).Add(float64(len(batch)))
	entries := make([]streams.Entry, 0, len(batch))
	commit := streams.Commit{
		Input: h.keys.ToSave(shard), Group: h.keys.SaveGroup(), Next: h.keys.ToDeliver(shard),
	}
	failures := streams.Failures{}
	for _, x := range batch {
		if e, ok := decode(ctx, x, "save", failures, h.limited); ok {
			entries = append(entries, e)
		}
	}

	results, failed, err := h.saveAll(ctx, entries)
	if err != nil {
		return err
	}
	// Sized for the common case, every entry saved: grown by append they
	// were a tenth of the server's allocated bytes (ToNext holds entries,
	// and only those routed save-first go on to delivery).
	acks := make([]domain.Ack, 0, len(entries))
	saveFirst := 0
	for i := range entries {
		if entries[i].Route == streams.SaveFirst {
			saveFirst++
		}
	}
	if saveFirst > 0 {
		commit.ToNext = make([]streams.Entry, 0, saveFirst)
	}
	commit.MarkSaved = make([]streams.IdemSaved, 0, len(entries))
	commit.Settle = make([]streams.Settled, 0, len(entries))
	commit.Ack = slices.Grow(commit.Ack, len(entries))
	var saved []domain.Message
	var fresh []bool
	var savedIDs []string
	if h.accepts != nil {
		savedIDs = make([]string, 0, len(entries))
	}
	now := time.Now().UnixMilli()
	for i := range entries {
		e := &entries[i]
		// The seq the accept step marked in flight: settled below whatever
		// happens to this entry (resequence moves e.Msg.Seq).
		settle := streams.Settled{Key: h.keys.InFlight(shard, e.Msg.ConversationID), Seq: e.Msg.Seq}
		if ferr, bad := failed[i]; bad {
			// A data error: the entry stays pending; the consumer retries
			// it per save.max_attempts, then dead-letters it (PrepareDead).
			// The rest of the shard flows on.
			h.limited.Warn(ctx, "save failed", "server_msg_id", e.Msg.ServerMsgID,
				"conversation_id", e.Msg.ConversationID, "seq", e.Msg.Seq, "err", ferr)
			failures[e.ID] = ferr
			continue
		}
		r := results[i]
		if r.Outcome == store.SeqTaken {
			if r, err = h.resequence(ctx, e); err != nil {
				return err
			}
		}
		idem := streams.IdemSaved{Key: h.keys.Idem(shard, e.Msg.SenderID, e.Msg.ClientMsgID)}
		orig := r.Original
		if r.Outcome == store.Duplicate {
			h.metrics.SaveDuplicates.Inc()
			idem.ServerMsgID, idem.Seq, idem.SendAt = orig.ServerMsgID, orig.Seq, orig.SendAt
			h.log.Info("late duplicate resolved to the original", "server_msg_id", e.Msg.ServerMsgID,
				"original_server_msg_id", orig.ServerMsgID, "conversation_id", e.Msg.ConversationID, "seq", e.Msg.Seq, "original_seq", orig.Seq)
		} else if e.Route == streams.SaveFirst && orig.Status != domain.StatusRevoked {
			// A message recalled before it was saved is not pushed: its
			// content must never be served; clients learn of it from the
			// revoke notice and a pull shows it revoked.
			commit.ToNext = append(commit.ToNext, *e)
		}
		if h.after != nil {
			saved, fresh = append(saved, orig), append(fresh, r.Outcome == store.Saved)
		}
		if h.accepts != nil {
			savedIDs = append(savedIDs, e.Msg.ServerMsgID)
		}
		commit.MarkSaved = append(commit.MarkSaved, idem)
		commit.Settle = append(commit.Settle, settle)
		commit.Ack = append(commit.Ack, e.ID)
		acks = append(acks, domain.Ack{Type: domain.AckSaved, ServerMsgID: orig.ServerMsgID, ClientMsgID: e.Msg.ClientMsgID,
			ConversationID: orig.ConversationID, Seq: orig.Seq, SendAt: orig.SendAt, UserID: e.Msg.SenderID})
		if e.AcceptedAt > 0 {
			h.metrics.SavedLag.Observe(float64(now-e.AcceptedAt) / 1000)
		}
	}
	if len(savedIDs) > 0 {
		h.accepts.Saved(shard, savedIDs)
	}
	// The push first: a hook may still make a round trip (media
	// references), which would otherwise be part of every delivery's
	// latency. A hook that fails retries the batch as a failed commit does,
	// after the push either way.
	if h.deliver != nil {
		commit.ToNext = h.deliver.DeliverSaved(ctx, shard, commit.ToNext)
	}
	if len(saved) > 0 {
		appends, err := h.after.AfterSave(ctx, saved, fresh)
		if err != nil {
			return fmt.Errorf("save: after-save events of %d messages: %w", len(saved), err)
		}
		commit.Appends = appends
	}
	if len(commit.Ack) > 0 { // each message the hooks heard of is acked here
		if err := commit.Apply(ctx, h.rdb); err != nil {
			h.metrics.PublishFailures.WithLabelValues("save").Inc()
			return fmt.Errorf("save: commit %d entries: %w", len(commit.Ack), err)
		}
	}
	h.metrics.SaveBatch.Observe(float64(len(entries)))
	for i := range acks {
		h.push.PushAck(ctx, acks[i].UserID, acks[i])
	}
	return failures.Err()
}

// saveAll saves entries, bisecting a batch that fails with a data error so
// one bad row never blocks the others. failed maps entry indexes to their
// permanent error; err is set only for retryable failures (the whole batch
// is then retried).
func (h *SaveHandler) saveAll(ctx context.Context, entries []streams.Entry) ([]store.SaveResult, map[int]error, error) {
	results := make([]store.SaveResult, len(entries))
	failed := map[int]error{}
	var run func(lo, hi int) error
	run = func(lo, hi int) error {
		if lo >= hi {
			return nil
		}
		msgs := make([]domain.Message, hi-lo)
		for i := lo; i < hi; i++ {
			msgs[i-lo] = entries[i].Msg
		}
		res, err := h.msgs.SaveBatch(ctx, msgs)
		switch {
		case err == nil:
			copy(results[lo:hi], res)
			return nil
		case store.IsRetryable(err):
			return err
		case hi-lo == 1:
			failed[lo] = err
			return nil
		}
		mid := (lo + hi) / 2
		if err := run(lo, mid); err != nil {
			return err
		}
		return run(mid, hi)
	}
	if err := run(0, len(entries)); err != nil {
		return nil, nil, fmt.Errorf("save batch of %d: %w", len(entries), err)
	}
	return results, failed, nil
}

// resequence saves an entry whose seq another message holds at a fresh
// seq (store.Resequence, the one SeqTaken policy): its ACK(saved) then
// names the new seq. An allocator that could not be retired is logged.
func (h *SaveHandler) resequence(ctx context.Context, e *streams.Entry) (store.SaveResult, error) {
	taken := e.Msg.Seq
	res, notRetired, err := store.Resequence(ctx, h.msgs, h.seqs, h.alloc, &e.Msg)
	if err != nil {
		return res, err
	}
	h.log.Warn("seq already taken by another message: resequenced", "server_msg_id", e.Msg.ServerMsgID,
		"conversation_id", e.Msg.ConversationID, "seq", taken, "new_seq", e.Msg.Seq)
	if notRetired != nil {
		h.log.Warn("resequence: could not retire the Redis allocator", "conversation_id", e.Msg.ConversationID, "err", notRetired)
	}
	return res, nil
}

// PrepareDead is the save stage's part in dead-lettering entries out of
// attempts (streams.DeadLetters.Prepare): a failed placeholder row keeps
// each message's seq readable as unavailable, and c settles the seq's
// in-flight mark with the entry's dead letter.
func (h *SaveHandler) PrepareDead(ctx context.Context, shard int, dead []streams.Dead, c *streams.Commit) error {
	for _, d := range dead {
		e, err := streams.Decode(d.Entry)
		if err != nil {
			continue // malformed: no message to keep a place for
		}
		h.limited.Error(ctx, "save failed permanently: dead-lettered", "server_msg_id", e.Msg.ServerMsgID,
			"conversation_id", e.Msg.ConversationID, "seq", e.Msg.Seq, "attempts", d.Attempts, "err", d.Err)
		if err := h.msgs.SaveFailed(ctx, e.Msg); err != nil {
			h.limited.Error(ctx, "save: failed placeholder not written", "server_msg_id", e.Msg.ServerMsgID,
				"conversation_id", e.Msg.ConversationID, "seq", e.Msg.Seq, "err", err)
		}
		c.Settle = append(c.Settle, streams.Settled{Key: h.keys.InFlight(shard, e.Msg.ConversationID), Seq: e.Msg.Seq})
	}
	return nil
}

// Parked hears of entries dead-lettered (streams.DeadLetters.Parked): each
// is counted, its sender told (3001 save_failed) and counted against the
// repeat-offender limit.
func (h *SaveHandler) Parked(ctx context.Context, _ int, dead []streams.Dead) {
	for _, d := range dead {
		h.metrics.DeadLetters.Inc()
		e, err := streams.Decode(d.Entry)
		if err != nil {
			continue
		}
		h.countOffender(ctx, &e.Msg)
		h.push.PushSaveFailed(ctx, &e.Msg)
	}
}

// countOffender tells DeadSenders of a user's dead-lettered message (the
// server's own notices are not the sender's doing). A counter that cannot
// be reached costs the count, nothing else.
func (h *SaveHandler) countOffender(ctx context.Context, m *domain.Message) {
	if h.offenders == nil || strings.HasPrefix(m.ClientMsgID, domain.SystemClientMsgIDPrefix) {
		return
	}
	blocked, err := h.offenders.DeadLetter(ctx, m.SenderID)
	switch {
	case err != nil:
		h.limited.Warn(ctx, "dead letter not counted against its sender", "user_id", m.SenderID, "err", err)
	case blocked:
		h.limited.Warn(ctx, "sender blocked: repeated dead letters", "user_id", m.SenderID)
	}
}

// newDeadLines is the rate-limited log of the stages' dead-letter and
// retry lines: 10 at once, then 1 a second, the rest counted (a stream of
// poison messages once wrote 6,512 lines a second).
func newDeadLines(log *slog.Logger) *domain.RateLog { return domain.NewRateLog(log, 1, 10) }

// decode returns x's entry. A malformed one is logged on dead (stage
// names the line) and put in failures as permanent, for the consumer to
// dead-letter; ok is false.
func decode(ctx context.Context, x redis.XMessage, stage string, failures streams.Failures, dead *domain.RateLog) (e streams.Entry, ok bool) {
	e, err := streams.Decode(x)
	if err != nil {
		dead.Error(ctx, stage+": malformed entry dead-lettered", "entry", x.ID, "err", err)
		failures[x.ID] = streams.Permanent(err)
		return e, false
	}
	return e, true
}
