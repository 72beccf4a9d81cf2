package sync

import (
	"context"
	"log/slog"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// AckPusher pushes a 2101 ACK to every connection of a user (chat.Pusher).
type AckPusher interface {
	PushAck(ctx context.Context, userID string, a domain.Ack)
}

// SenderLookup returns the distinct senders of the readable messages of
// seq ranges, per conversation (store.ConversationRepo).
type SenderLookup interface {
	Senders(ctx context.Context, ranges []store.SeqRange) (map[string][]string, error)
}

// GroupSizes returns a group and its number of active members, from the
// member cache (group.Members).
type GroupSizes interface {
	Group(ctx context.Context, groupID string) (domain.Group, int, error)
}

// receiptScan bounds how far below a group member's new read cursor the
// senders of newly read messages are looked up: a member who catches up
// on thousands of messages sends receipts for the newest 500 seqs only.
const receiptScan = 500

// Receipts pushes 2101 receipts for the cursors a flush took ACKs for (the
// CursorWriter's MoveSink). In single chat the other party gets {ack_type:
// delivered | read, conversation_id, seq, user_id} with the member's cursor
// as it now stands: read after a read ACK, delivered after a delivered ACK
// when it is beyond the read cursor (a read receipt implies delivery) —
// also when the ACK moved nothing, because a member's own message moves
// its read cursor in the save without a receipt, and an ACK may arrive
// after that. Receipts are idempotent (clients keep the highest); at most
// one per kind per flush window. None for a note to self. In a group of at
// most group_receipt_max_members active members, the senders of the newly
// read messages get one read receipt each per flush; delivered cursors of
// groups send nothing.
type Receipts struct {
	counts   ReadCountSink // nil: the per-flush group receipts above
	push     AckPusher
	senders  SenderLookup
	groups   GroupSizes
	maxGroup int
	log      *slog.Logger
}

// NewReceipts returns the receipt pusher; maxGroup is
// sync.group_receipt_max_members (0 turns group receipts off). groups may
// be nil until group chat is wired (group receipts are then off).
func NewReceipts(push AckPusher, senders SenderLookup, groups GroupSizes, maxGroup int, log *slog.Logger) *Receipts {
	return &Receipts{push: push, senders: senders, groups: groups, maxGroup: maxGroup, log: log}
}

// ReadCountSink hears which seqs of a group conversation a member just
// read (actions.ReadCounts), to send its senders coalesced read counts.
type ReadCountSink interface {
	Note(conversationID string, after, upto int64)
}

// UseReadCounts sends every group read move to sink, whatever the group's
// size, for coalesced read-count updates (docs/sync.md, "Read counts").
// The per-reader group receipts above stay only for clients that predate
// them, while sync.group_receipt_max_members > 0; 0 leaves read counts
// alone. Single-chat receipts are unchanged.
func (r *Receipts) UseReadCounts(sink ReadCountSink) { r.counts = sink }

// Moved implements MoveSink. Failures to look up senders or group sizes
// are logged: a receipt is an acceleration, the cursors are the truth
// (1001 reads them).
func (r *Receipts) Moved(ctx context.Context, moves []Move) {
	var ranges []store.SeqRange
	var readers []Move
	sizes := map[string]bool{} // group ID -> receipts on
	for _, mv := range moves {
		switch t, _ := domain.ConversationSessionType(mv.ConversationID); t {
		case domain.SessionSingle:
			r.single(ctx, mv)
		case domain.SessionGroup:
			if r.counts != nil {
				r.counts.Note(mv.ConversationID, mv.FromRead, mv.ToRead)
			}
			if mv.ToRead <= mv.FromRead || !r.groupOn(ctx, domain.GroupIDOf(mv.ConversationID), sizes) {
				continue
			}
			ranges = append(ranges, store.SeqRange{ConversationID: mv.ConversationID,
				After: max(mv.FromRead, mv.ToRead-receiptScan), Upto: mv.ToRead})
			readers = append(readers, mv)
		}
	}
	if len(ranges) == 0 {
		return
	}
	senders, err := r.senders.Senders(ctx, ranges)
	if err != nil {
		r.log.Warn("group read receipts skipped: sender lookup failed", "err", err)
		return
	}
	for _, mv := range readers {
		for _, s := range senders[mv.ConversationID] {
			if s != mv.UserID {
				r.push.PushAck(ctx, s, domain.Ack{Type: domain.AckRead, ConversationID: mv.ConversationID,
					Seq: mv.ToRead, UserID: mv.UserID})
			}
		}
	}
}

func (r *Receipts) single(ctx context.Context, mv Move) {
	peer, ok := domain.SinglePeer(mv.ConversationID, mv.UserID)
	if !ok || peer == mv.UserID {
		return
	}
	read := mv.AckedRead > 0
	delivered := mv.AckedDelivered > mv.AckedRead && mv.ToDelivered > mv.ToRead
	if delivered {
		r.push.PushAck(ctx, peer, domain.Ack{Type: domain.AckDelivered, ConversationID: mv.ConversationID,
			Seq: mv.ToDelivered, UserID: mv.UserID})
	}
	if read {
		r.push.PushAck(ctx, peer, domain.Ack{Type: domain.AckRead, ConversationID: mv.ConversationID,
			Seq: mv.ToRead, UserID: mv.UserID})
	}
}

// groupOn reports whether the group is small enough for read receipts,
// looking each group up once per flush.
func (r *Receipts) groupOn(ctx context.Context, groupID string, seen map[string]bool) bool {
	if r.maxGroup <= 0 || r.groups == nil || groupID == "" {
		return false
	}
	if on, ok := seen[groupID]; ok {
		return on
	}
	_, n, err := r.groups.Group(ctx, groupID)
	if err != nil {
		r.log.Debug("group read receipts skipped: group lookup failed", "group_id", groupID, "err", err)
	}
	on := err == nil && n <= r.maxGroup
	seen[groupID] = on
	return on
}
