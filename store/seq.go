package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/nexo-im/nexo/domain"
)

// SeqRepo owns seq_conversations: the reserved ceiling leased to the Redis
// allocator and the highest saved seq.
type SeqRepo struct{ db *DB }

// NewSeqRepo returns a SeqRepo over db.
func NewSeqRepo(db *DB) *SeqRepo { return &SeqRepo{db: db} }

// Lease reserves the next block of seqs for conversationID and returns it:
// (Base, Ceiling] with Ceiling-Base == block. The reserved ceiling is moved
// and committed before Lease returns, so every seq of the block is fresh even
// if the caller crashes or Redis later loses its copy; a block that is never
// used leaves a gap, which pulls report as "unavailable". Lease(…, 1) is the
// allocator of the synchronous fallback path when Redis is unreachable.
func (r *SeqRepo) Lease(ctx context.Context, conversationID string, block int64) (domain.SeqLease, error) {
	if block < 1 {
		return domain.SeqLease{}, fmt.Errorf("lease block %d: %w", block, domain.ErrInvalidArgument)
	}
	var ceiling int64
	err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row := seqConversationRow{ConversationID: conversationID, ReservedSeq: block}
		err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "conversation_id"}},
			DoUpdates: clause.Assignments(map[string]any{"reserved_seq": gorm.Expr("reserved_seq + ?", block)}),
		}).Create(&row).Error
		if err != nil {
			return err
		}
		return tx.Model(&seqConversationRow{}).Where("conversation_id = ?", conversationID).
			Pluck("reserved_seq", &ceiling).Error
	})
	if err != nil {
		return domain.SeqLease{}, fmt.Errorf("lease %d seqs of %s: %w", block, conversationID, err)
	}
	return domain.SeqLease{ConversationID: conversationID, Base: ceiling - block, Ceiling: ceiling}, nil
}

// MaxSeq returns the highest saved (or resolved) seq of a conversation, 0
// when it has none.
func (r *SeqRepo) MaxSeq(ctx context.Context, conversationID string) (int64, error) {
	return r.seqColumn(ctx, conversationID, "max_seq")
}

// seqColumn reads column of conversationID's seq_conversations row, 0 when
// it has none.
func (r *SeqRepo) seqColumn(ctx context.Context, conversationID, column string) (int64, error) {
	var v []int64
	err := r.db.Gorm.WithContext(ctx).Model(&seqConversationRow{}).
		Where("conversation_id = ?", conversationID).Pluck(column, &v).Error
	if err != nil || len(v) == 0 {
		return 0, err
	}
	return v[0], nil
}

// MaxSeqs is MaxSeq of many conversations in one query: the map holds each
// conversation of conversationIDs that has a saved seq (absent: 0).
func (r *SeqRepo) MaxSeqs(ctx context.Context, conversationIDs []string) (map[string]int64, error) {
	var rows []struct {
		ConversationID string
		MaxSeq         int64
	}
	err := r.db.Gorm.WithContext(ctx).Model(&seqConversationRow{}).Select("conversation_id, max_seq").
		Where("conversation_id IN ?", conversationIDs).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, row := range rows {
		out[row.ConversationID] = row.MaxSeq
	}
	return out, nil
}

// Reserved returns the reserved ceiling of a conversation (for tests and the
// admin view), 0 when nothing was ever leased.
func (r *SeqRepo) Reserved(ctx context.Context, conversationID string) (int64, error) {
	return r.seqColumn(ctx, conversationID, "reserved_seq")
}

// greatest returns the dialect's two-argument maximum of a column and the
// value being upserted ("excluded"/VALUES()); only used in upserts.
func (db *DB) greatestUpsert(col string) clause.Expr {
	if db.Dialect == SQLite {
		return gorm.Expr(fmt.Sprintf("MAX(%s, excluded.%s)", col, col))
	}
	return gorm.Expr(fmt.Sprintf("GREATEST(%s, VALUES(%s))", col, col))
}

// ReturnLease lowers the reserved ceiling of conversationID from ceiling
// back to issued, giving back seqs a lease reserved but nobody issued, so the
// next start continues without a gap. It does nothing when the ceiling has
// moved since (another lease was taken). Only safe once nothing can issue
// from the returned range: the embedded default calls it at shutdown.
func (r *SeqRepo) ReturnLease(ctx context.Context, conversationID string, issued, ceiling int64) error {
	err := r.db.Gorm.WithContext(ctx).Model(&seqConversationRow{}).
		Where("conversation_id = ? AND reserved_seq = ? AND max_seq <= ?", conversationID, ceiling, issued).
		Update("reserved_seq", issued).Error
	if err != nil {
		return fmt.Errorf("return lease of %s: %w", conversationID, err)
	}
	return nil
}

// BatchSaver saves messages (MessageRepo.SaveBatch).
type BatchSaver interface {
	SaveBatch(ctx context.Context, msgs []domain.Message) ([]SaveResult, error)
}

// SeqLeaser leases seqs from the database (SeqRepo.Lease).
type SeqLeaser interface {
	Lease(ctx context.Context, conversationID string, block int64) (domain.SeqLease, error)
}

// AllocatorRetirer moves a conversation's Redis seq allocator above seq, so
// the seqs it issues next come after a seq issued around it
// (streams.Accepter.Retire).
type AllocatorRetirer interface {
	Retire(ctx context.Context, conversationID string, seq int64) error
}

// ErrSeqTakenAgain is Resequence's error when every fresh seq it tried
// was taken as well.
var ErrSeqTakenAgain = errors.New("seq taken again")

// resequenceAttempts is how many fresh seqs Resequence tries.
const resequenceAttempts = 3

// Resequence saves m, which SaveBatch answered SeqTaken (its seq holds
// another message: Redis handed the seq out twice after a failover lost
// writes), at a fresh seq. It is the one SeqTaken policy, of the save stage
// and of the synchronous path alike:
//
//   - the fresh seq is leased from the database (seqs.Lease of one), above
//     every seq any Redis allocator was ever leased, so no other message
//     can be given it;
//   - the Redis allocator is retired above it at once, before the save
//     (alloc.Retire), so the seqs Redis issues next come after it;
//   - m is saved at it; should that seq be taken too (a database that lost
//     its leases), another is leased, up to three in all, then the error is
//     ErrSeqTakenAgain.
//
// m.Seq is left at the last seq tried. res is SaveBatch's result for m at
// its new seq: Saved, or Duplicate when the original of its client_msg_id
// was saved meanwhile. A Retire that fails does not stop the save — the
// leased seq is unique without it; only the order of the seqs Redis issues
// next is at stake — and comes back as notRetired, for the caller to log
// or to retry before the conversation's next seq. err is a lease or save
// failure (m is then not saved) or ErrSeqTakenAgain.
func Resequence(ctx context.Context, msgs BatchSaver, seqs SeqLeaser, alloc AllocatorRetirer, m *domain.Message) (res SaveResult, notRetired, err error) {
	for range resequenceAttempts {
		lease, err := seqs.Lease(ctx, m.ConversationID, 1)
		if err != nil {
			return SaveResult{}, notRetired, fmt.Errorf("resequence %s: %w", m.ServerMsgID, err)
		}
		m.Seq = lease.Ceiling
		notRetired = alloc.Retire(ctx, m.ConversationID, m.Seq)
		saved, err := msgs.SaveBatch(ctx, []domain.Message{*m})
		if err != nil {
			return SaveResult{}, notRetired, fmt.Errorf("resequence %s to seq %d: %w", m.ServerMsgID, m.Seq, err)
		}
		if saved[0].Outcome != SeqTaken {
			return saved[0], notRetired, nil
		}
	}
	return SaveResult{}, notRetired, fmt.Errorf("resequence %s: %d fresh seqs, the last %d: %w", m.ServerMsgID, resequenceAttempts, m.Seq, ErrSeqTakenAgain)
}
