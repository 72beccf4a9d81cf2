package store

import (
	"context"
	"fmt"

	"gorm.io/gorm/clause"

	"github.com/nexo-im/nexo/domain"
)

// blockRow is one block: BlockerID refuses BlockedID's single-chat
// messages, typing indicators and group invitations (docs/moderation.md).
type blockRow struct {
	BlockerID string `gorm:"column:blocker_id;type:varchar(64);primaryKey"`
	BlockedID string `gorm:"column:blocked_id;type:varchar(64);primaryKey;index:idx_blocked"`
	CreatedAt int64  `gorm:"column:created_at;not null;autoCreateTime:false"`
}

func (blockRow) TableName() string { return "user_blocks" }

// BlockRepo stores who blocked whom.
type BlockRepo struct{ db *DB }

// NewBlockRepo returns the block store on db.
func NewBlockRepo(db *DB) *BlockRepo { return &BlockRepo{db: db} }

// Block records that blocker blocks blocked; blocking again is a no-op.
func (r *BlockRepo) Block(ctx context.Context, blocker, blocked string) error {
	row := blockRow{BlockerID: blocker, BlockedID: blocked, CreatedAt: nowMillis()}
	err := r.db.Gorm.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("block %s by %s: %w", blocked, blocker, err)
	}
	return nil
}

// Unblock removes the block of blocked by blocker; none is a no-op.
func (r *BlockRepo) Unblock(ctx context.Context, blocker, blocked string) error {
	err := r.db.Gorm.WithContext(ctx).Where("blocker_id = ? AND blocked_id = ?", blocker, blocked).Delete(&blockRow{}).Error
	if err != nil {
		return fmt.Errorf("unblock %s by %s: %w", blocked, blocker, err)
	}
	return nil
}

// Blocks returns the users blocker blocks, oldest block first, with when
// each was blocked (Unix ms).
func (r *BlockRepo) Blocks(ctx context.Context, blocker string) ([]domain.Block, error) {
	var rows []blockRow
	err := r.db.Gorm.WithContext(ctx).Where("blocker_id = ?", blocker).Order("created_at, blocked_id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("blocks of %s: %w", blocker, err)
	}
	out := make([]domain.Block, len(rows))
	for i, row := range rows {
		out[i] = domain.Block{UserID: row.BlockedID, CreatedAt: row.CreatedAt}
	}
	return out, nil
}

// BlockersOf reports which of users block userID.
func (r *BlockRepo) BlockersOf(ctx context.Context, userID string, users []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(users) == 0 {
		return out, nil
	}
	var found []string
	err := r.db.Gorm.WithContext(ctx).Model(&blockRow{}).
		Where("blocked_id = ? AND blocker_id IN ?", userID, users).Pluck("blocker_id", &found).Error
	if err != nil {
		return nil, fmt.Errorf("blockers of %s: %w", userID, err)
	}
	for _, u := range found {
		out[u] = true
	}
	return out, nil
}
