package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/nexo-im/nexo/domain"
)

// deletedUserRow (migration 15) reserves the user_id of a deleted account:
// IDNorm is unique, so neither the ID nor a letter-case variant of it can
// be registered again. It holds no profile data.
type deletedUserRow struct {
	IDNorm    string `gorm:"column:id_norm;type:varchar(64);primaryKey"`
	ID        string `gorm:"column:id;type:varchar(64);not null"`
	DeletedAt int64  `gorm:"column:deleted_at;not null"`
}

func (deletedUserRow) TableName() string { return "deleted_users" }

// retentionRow (migration 15) is a conversation's own retention, set by a
// group's owner or admin or by either party of a single chat.
type retentionRow struct {
	ConversationID string `gorm:"column:conversation_id;type:varchar(256);primaryKey"`
	MaxAgeMs       int64  `gorm:"column:max_age_ms;not null"`
	SetBy          string `gorm:"column:set_by;type:varchar(64);not null;default:''"`
	UpdatedAt      int64  `gorm:"column:updated_at;not null;autoUpdateTime:false"`
}

func (retentionRow) TableName() string { return "conversation_retention" }

// migratePrivacy is migration 15 (docs/privacy.md): deleted_users,
// conversation_retention and conversations.cleared_seq.
func migratePrivacy(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	for _, t := range []any{&deletedUserRow{}, &retentionRow{}} {
		if !m.HasTable(t) {
			if err := m.CreateTable(t); err != nil {
				return fmt.Errorf("create %T: %w", t, err)
			}
		}
	}
	if !m.HasColumn(&conversationRow{}, "ClearedSeq") {
		if err := m.AddColumn(&conversationRow{}, "ClearedSeq"); err != nil {
			return fmt.Errorf("add conversations.cleared_seq: %w", err)
		}
	}
	return nil
}

// PrivacyRepo erases deleted accounts, keeps their IDs reserved, stores
// per-conversation retention and per-user cleared history, and deletes
// expired messages (docs/privacy.md).
type PrivacyRepo struct {
	db *DB
	// searchSeen: message_search exists (it is created at start when
	// search is enabled, and never dropped); checkedAt is when its absence
	// was last seen, so the check runs at most once a minute, not per batch.
	mu         sync.Mutex
	searchSeen bool
	checkedAt  time.Time
}

// NewPrivacyRepo returns the repository on db.
func NewPrivacyRepo(db *DB) *PrivacyRepo { return &PrivacyRepo{db: db} }

// hasSearch reports whether message_search exists.
func (r *PrivacyRepo) hasSearch(g *gorm.DB) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.searchSeen || time.Since(r.checkedAt) < time.Minute {
		return r.searchSeen
	}
	r.searchSeen, r.checkedAt = g.Migrator().HasTable("message_search"), time.Now()
	return r.searchSeen
}

// eraseBatch is how many rows one erase or expiry statement deletes: small
// enough that no statement holds its row locks for long.
const eraseBatch = 500

// Reserved reports whether id, or a letter-case variant of it, belonged to
// a deleted account.
func (r *PrivacyRepo) Reserved(ctx context.Context, id string) (bool, error) {
	return reserved(r.db.Gorm.WithContext(ctx), id)
}

func reserved(g *gorm.DB, id string) (bool, error) {
	var n int64
	if err := g.Model(&deletedUserRow{}).Where("id_norm = ?", domain.NormalizeUserID(id)).Count(&n).Error; err != nil {
		return false, fmt.Errorf("reserved user id %q: %w", id, err)
	}
	return n > 0, nil
}

// EraseOptions says what EraseUser removes besides the profile.
type EraseOptions struct {
	// Messages deletes every message the user sent (with its search row
	// and mentions); otherwise they stay, attributed to the reserved ID.
	Messages bool
}

// EraseUser removes what the database holds about userID: the users row
// (the ID is reserved in deleted_users in the same transaction), their
// conversation rows and cursors, their blocks both ways, their join
// applications, their profile fields in group_members (the rows
// themselves stay as the record of past membership, with status as the
// group service left it), the mentions of them and, with opt.Messages,
// every message they sent. Deletes run in batches of eraseBatch rows, each
// its own statement. Idempotent: erasing again finishes an erase cut
// short. An unknown user that is not reserved is domain.ErrUserNotFound.
func (r *PrivacyRepo) EraseUser(ctx context.Context, userID string, opt EraseOptions) error {
	g := r.db.Gorm.WithContext(ctx)
	var n int64
	if err := g.Model(&userRow{}).Where("id = ?", userID).Count(&n).Error; err != nil {
		return fmt.Errorf("erase %s: %w", userID, err)
	}
	if n == 0 {
		ok, err := r.Reserved(ctx, userID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("erase %s: %w", userID, domain.ErrUserNotFound)
		}
	}
	batched := []struct {
		what  string
		model any
		where string
		args  []any
	}{
		{"conversations", &conversationRow{}, "owner_id = ?", []any{userID}},
		{"cursors", &seqUserRow{}, "user_id = ?", []any{userID}},
		{"mentions", &mentionRow{}, "user_id = ?", []any{userID}},
		{"join applications", &groupRequestRow{}, "user_id = ?", []any{userID}},
	}
	for _, b := range batched {
		if err := deleteInBatches(g, b.model, b.where, b.args...); err != nil {
			return fmt.Errorf("erase %s of %s: %w", b.what, userID, err)
		}
	}
	for _, col := range []string{"blocker_id", "blocked_id"} {
		if err := g.Where(col+" = ?", userID).Delete(&blockRow{}).Error; err != nil {
			return fmt.Errorf("erase blocks of %s: %w", userID, err)
		}
	}
	if err := g.Model(&groupMemberRow{}).Where("user_id = ?", userID).
		Updates(map[string]any{"group_nickname": "", "group_avatar": "", "extra": nil, "updated_at": nowMillis()}).Error; err != nil {
		return fmt.Errorf("erase group profiles of %s: %w", userID, err)
	}
	if opt.Messages {
		if err := r.eraseMessages(ctx, "sender_id = ?", userID); err != nil {
			return fmt.Errorf("erase messages of %s: %w", userID, err)
		}
	}
	return g.Transaction(func(tx *gorm.DB) error {
		row := deletedUserRow{IDNorm: domain.NormalizeUserID(userID), ID: userID, DeletedAt: nowMillis()}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
			return fmt.Errorf("reserve %s: %w", userID, err)
		}
		if err := tx.Where("id = ?", userID).Delete(&userRow{}).Error; err != nil {
			return fmt.Errorf("delete user %s: %w", userID, err)
		}
		return nil
	})
}

// deleteInBatches deletes the rows of model matching where, eraseBatch at
// a time, until none is left.
func deleteInBatches(g *gorm.DB, model any, where string, args ...any) error {
	for {
		// A subquery picks the batch; MySQL refuses LIMIT inside IN, so
		// the rows are deleted by a plain LIMIT where the dialect has it.
		res := g.Where(where, args...).Limit(eraseBatch).Delete(model)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected < eraseBatch {
			return nil
		}
	}
}

// msgKey names one stored message.
type msgKey struct {
	ID             int64
	ConversationID string
	Seq            int64
	AtUserIDs      *string
}

// eraseMessages deletes the messages matching where, eraseBatch at a time
// by primary key, with their search rows and mentions, and returns how
// many it deleted.
func (r *PrivacyRepo) eraseMessages(ctx context.Context, where string, args ...any) error {
	_, err := r.deleteMessages(ctx, -1, where, args...)
	return err
}

// deleteMessages deletes up to max (negative: all) messages matching
// where, in batches, and returns how many it deleted.
func (r *PrivacyRepo) deleteMessages(ctx context.Context, max int, where string, args ...any) (int, error) {
	g := r.db.Gorm.WithContext(ctx)
	search := r.hasSearch(g)
	total := 0
	for max < 0 || total < max {
		n := eraseBatch
		if max >= 0 {
			n = min(n, max-total)
		}
		var keys []msgKey
		if err := g.Model(&messageRow{}).Select("id", "conversation_id", "seq", "at_user_ids").Where(where, args...).Order("id").Limit(n).Find(&keys).Error; err != nil {
			return total, err
		}
		if len(keys) == 0 {
			return total, nil
		}
		if err := r.deleteKeys(ctx, keys, search); err != nil {
			return total, err
		}
		total += len(keys)
		if len(keys) < n {
			return total, nil
		}
	}
	return total, nil
}

// deleteKeys deletes the given messages, their search rows, their
// mentions and their object refs, each by key.
func (r *PrivacyRepo) deleteKeys(ctx context.Context, keys []msgKey, search bool) error {
	g := r.db.Gorm.WithContext(ctx)
	ids := make([]int64, len(keys))
	var pairs []any
	cond := ""
	for i, k := range keys {
		ids[i] = k.ID
		if i > 0 {
			cond += " OR "
		}
		cond += "(conversation_id = ? AND seq = ?)"
		pairs = append(pairs, k.ConversationID, k.Seq)
	}
	if search {
		if err := g.Exec("DELETE FROM message_search WHERE "+cond, pairs...).Error; err != nil {
			return fmt.Errorf("delete %d search rows: %w", len(keys), err)
		}
	}
	// Mentions by their primary key (user_id, conversation_id, seq): the
	// mentioned users are in the message's at_user_ids.
	var mcond string
	var margs []any
	for _, k := range keys {
		if k.AtUserIDs == nil {
			continue
		}
		var ids []string
		_ = json.Unmarshal([]byte(*k.AtUserIDs), &ids)
		for _, u := range ids {
			if mcond != "" {
				mcond += " OR "
			}
			mcond += "(user_id = ? AND conversation_id = ? AND seq = ?)"
			margs = append(margs, u, k.ConversationID, k.Seq)
		}
	}
	if mcond != "" {
		if err := g.Where(mcond, margs...).Delete(&mentionRow{}).Error; err != nil {
			return fmt.Errorf("delete mentions of %d messages: %w", len(keys), err)
		}
	}
	// The refs go with the messages, in one short transaction: a batch
	// cut short never leaves refs to deleted messages, nor messages whose
	// objects lost their refs. An object with no ref left becomes an
	// orphan the media cleaner deletes (docs/media.md, "Lifecycle").
	return g.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("DELETE FROM object_refs WHERE "+cond, pairs...).Error; err != nil {
			return fmt.Errorf("delete object refs of %d messages: %w", len(keys), err)
		}
		if err := tx.Where("id IN ?", ids).Delete(&messageRow{}).Error; err != nil {
			return fmt.Errorf("delete %d messages: %w", len(keys), err)
		}
		return nil
	})
}

// SetRetention sets conversationID's own retention (maxAgeMs > 0) or
// removes it (0: the server's retention.max_age alone applies).
func (r *PrivacyRepo) SetRetention(ctx context.Context, conversationID string, maxAgeMs int64, by string) error {
	g := r.db.Gorm.WithContext(ctx)
	if maxAgeMs <= 0 {
		if err := g.Where("conversation_id = ?", conversationID).Delete(&retentionRow{}).Error; err != nil {
			return fmt.Errorf("clear retention of %s: %w", conversationID, err)
		}
		return nil
	}
	row := retentionRow{ConversationID: conversationID, MaxAgeMs: maxAgeMs, SetBy: by, UpdatedAt: nowMillis()}
	err := g.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "conversation_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"max_age_ms", "set_by", "updated_at"})}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("set retention of %s: %w", conversationID, err)
	}
	return nil
}

// Retention returns conversationID's own retention in milliseconds (0:
// none set).
func (r *PrivacyRepo) Retention(ctx context.Context, conversationID string) (int64, error) {
	var rows []retentionRow
	if err := r.db.Gorm.WithContext(ctx).Where("conversation_id = ?", conversationID).Limit(1).Find(&rows).Error; err != nil {
		return 0, fmt.Errorf("retention of %s: %w", conversationID, err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	return rows[0].MaxAgeMs, nil
}

// Retentions returns every conversation's own retention (milliseconds).
// There is one row per conversation that set one, few in practice.
func (r *PrivacyRepo) Retentions(ctx context.Context) (map[string]int64, error) {
	var rows []retentionRow
	if err := r.db.Gorm.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("retentions: %w", err)
	}
	out := make(map[string]int64, len(rows))
	for _, row := range rows {
		out[row.ConversationID] = row.MaxAgeMs
	}
	return out, nil
}

// DeleteExpired deletes up to max messages sent before beforeMs — in
// conversationID only when it is not "", else in every conversation except
// those of skip (which follow their own retention) — and returns how many.
// Each batch is its own short statement, so a sweep never holds locks for
// long; the search rows and mentions of the deleted messages go with them.
func (r *PrivacyRepo) DeleteExpired(ctx context.Context, conversationID string, skip []string, beforeMs int64, max int) (int, error) {
	where, args := "send_at < ?", []any{beforeMs}
	if conversationID != "" {
		where, args = "conversation_id = ? AND send_at < ?", []any{conversationID, beforeMs}
	} else if len(skip) > 0 {
		where, args = "send_at < ? AND conversation_id NOT IN ?", []any{beforeMs, skip}
	}
	n, err := r.deleteMessages(ctx, max, where, args...)
	if err != nil {
		return n, fmt.Errorf("delete expired messages: %w", err)
	}
	return n, nil
}

// Clear records that ownerID cleared conversationID up to seq and hides
// it from their list until a message above seq (cleared_seq and
// hidden_seq only rise), creating the owner's conversation row when there
// is none.
func (r *PrivacyRepo) Clear(ctx context.Context, ownerID, conversationID string, seq int64) error {
	t, _ := domain.ConversationSessionType(conversationID)
	row := conversationRow{ConversationID: conversationID, OwnerID: ownerID, ConversationType: int(t),
		GroupID: domain.GroupIDOf(conversationID), ClearedSeq: seq, HiddenSeq: seq, CreatedAt: nowMillis(), UpdatedAt: nowMillis()}
	if peer, ok := domain.SinglePeer(conversationID, ownerID); ok && t == domain.SessionSingle {
		row.PeerUserID = peer
	}
	err := r.db.Gorm.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "owner_id"}, {Name: "conversation_id"}},
		DoUpdates: clause.Assignments(map[string]any{
			"cleared_seq": gorm.Expr("CASE WHEN cleared_seq < ? THEN ? ELSE cleared_seq END", seq, seq),
			"hidden_seq":  gorm.Expr("CASE WHEN hidden_seq < ? THEN ? ELSE hidden_seq END", seq, seq)}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("clear %s of %s: %w", conversationID, ownerID, err)
	}
	return nil
}

// ClearedSeq returns the seq ownerID cleared conversationID up to (0:
// never cleared).
func (r *PrivacyRepo) ClearedSeq(ctx context.Context, ownerID, conversationID string) (int64, error) {
	var rows []conversationRow
	err := r.db.Gorm.WithContext(ctx).Select("cleared_seq").Where("owner_id = ? AND conversation_id = ?", ownerID, conversationID).
		Limit(1).Find(&rows).Error
	if err != nil {
		return 0, fmt.Errorf("cleared seq of %s for %s: %w", conversationID, ownerID, err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	return rows[0].ClearedSeq, nil
}
