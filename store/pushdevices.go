package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/nexo-im/nexo/domain"
)

// pushDeviceRow is one registered push target (docs/push.md): an FCM or
// APNs token, or a Web Push subscription (Token holds its endpoint). One
// token belongs to one user: registering it again, by anyone, moves it.
type pushDeviceRow struct {
	ID         string `gorm:"column:id;type:varchar(36);primaryKey"`
	UserID     string `gorm:"column:user_id;type:varchar(64);not null;index:idx_push_user"`
	Provider   string `gorm:"column:provider;type:varchar(16);not null;uniqueIndex:uk_push_token,priority:1"`
	TokenHash  string `gorm:"column:token_hash;type:char(64);not null;uniqueIndex:uk_push_token,priority:2"`
	Token      string `gorm:"column:token;type:text;not null"`
	P256dh     string `gorm:"column:p256dh;type:varchar(128);not null;default:''"`
	Auth       string `gorm:"column:auth;type:varchar(64);not null;default:''"`
	PlatformID int    `gorm:"column:platform_id;not null"`
	AppID      string `gorm:"column:app_id;type:varchar(128);not null;default:''"`
	Locale     string `gorm:"column:locale;type:varchar(35);not null;default:''"`
	CreatedAt  int64  `gorm:"column:created_at;not null;autoCreateTime:false"`
	UpdatedAt  int64  `gorm:"column:updated_at;not null;autoUpdateTime:false"`
	// Stamp orders registrations (Unix ns): milliseconds tie.
	Stamp int64 `gorm:"column:stamp;not null;default:0"`
}

func (pushDeviceRow) TableName() string { return "push_devices" }

// PushDevice is a registered push target.
type PushDevice struct {
	ID         string
	UserID     string
	Provider   string // fcm, apns, webpush
	Token      string // FCM/APNs token, or the Web Push endpoint
	P256dh     string // Web Push: the subscription's public key (base64url)
	Auth       string // Web Push: the subscription's auth secret (base64url)
	PlatformID int
	AppID      string
	Locale     string
	CreatedAt  int64 // Unix ms
	UpdatedAt  int64 // Unix ms: the last registration
}

// PushDeviceRepo stores push devices. The table is created when the repo
// is built (the built-in push is optional; a deployment without it has no
// table).
type PushDeviceRepo struct{ db *DB }

// NewPushDeviceRepo returns the repo on db, creating push_devices and
// push_mentions_only if missing.
func NewPushDeviceRepo(ctx context.Context, db *DB) (*PushDeviceRepo, error) {
	if err := db.Gorm.WithContext(ctx).AutoMigrate(&pushDeviceRow{}, &pushMentionsOnlyRow{}); err != nil {
		return nil, fmt.Errorf("create push_devices, push_mentions_only: %w", err)
	}
	return &PushDeviceRepo{db: db}, nil
}

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func (r pushDeviceRow) device() PushDevice {
	return PushDevice{ID: r.ID, UserID: r.UserID, Provider: r.Provider, Token: r.Token, P256dh: r.P256dh, Auth: r.Auth,
		PlatformID: r.PlatformID, AppID: r.AppID, Locale: r.Locale, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// Register stores d for d.UserID and returns it with its ID: a token or
// endpoint already registered (by anyone) keeps its ID and is moved to
// d.UserID with d's fields. Beyond maxPerUser devices the user's least
// recently registered ones are removed.
func (r *PushDeviceRepo) Register(ctx context.Context, d PushDevice, maxPerUser int) (PushDevice, error) {
	now := nowMillis()
	row := pushDeviceRow{ID: uuid.NewString(), UserID: d.UserID, Provider: d.Provider, TokenHash: tokenHash(d.Token), Token: d.Token,
		P256dh: d.P256dh, Auth: d.Auth, PlatformID: d.PlatformID, AppID: d.AppID, Locale: d.Locale, CreatedAt: now, UpdatedAt: now,
		Stamp: time.Now().UnixNano()}
	var out pushDeviceRow
	for attempt := 0; ; attempt++ {
		err := r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var old pushDeviceRow
			err := tx.Where("provider = ? AND token_hash = ?", row.Provider, row.TokenHash).Take(&old).Error
			switch {
			case errors.Is(err, gorm.ErrRecordNotFound):
				out = row
				return tx.Create(&out).Error
			case err != nil:
				return err
			}
			out = row
			out.ID, out.CreatedAt = old.ID, old.CreatedAt
			return tx.Model(&pushDeviceRow{}).Where("id = ?", old.ID).Updates(map[string]any{
				"user_id": out.UserID, "token": out.Token, "p256dh": out.P256dh, "auth": out.Auth, "platform_id": out.PlatformID,
				"app_id": out.AppID, "locale": out.Locale, "updated_at": now, "stamp": out.Stamp}).Error
		})
		if err != nil && isDuplicate(err) && attempt < 2 {
			continue // a concurrent registration of the same token: update it
		}
		if err != nil {
			return PushDevice{}, fmt.Errorf("register push device of %s: %w", d.UserID, err)
		}
		break
	}
	if maxPerUser > 0 {
		var ids []string
		err := r.db.Gorm.WithContext(ctx).Model(&pushDeviceRow{}).Where("user_id = ?", d.UserID).
			Order("stamp DESC, id DESC").Offset(maxPerUser).Limit(1000).Pluck("id", &ids).Error
		if err == nil && len(ids) > 0 {
			err = r.db.Gorm.WithContext(ctx).Where("id IN ?", ids).Delete(&pushDeviceRow{}).Error
		}
		if err != nil {
			return PushDevice{}, fmt.Errorf("cap push devices of %s: %w", d.UserID, err)
		}
	}
	return out.device(), nil
}

// List returns userID's devices, most recently registered first.
func (r *PushDeviceRepo) List(ctx context.Context, userID string) ([]PushDevice, error) {
	var rows []pushDeviceRow
	if err := r.db.Gorm.WithContext(ctx).Where("user_id = ?", userID).Order("stamp DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("push devices of %s: %w", userID, err)
	}
	out := make([]PushDevice, len(rows))
	for i, row := range rows {
		out[i] = row.device()
	}
	return out, nil
}

// OfUsers returns the devices of userIDs, by user.
func (r *PushDeviceRepo) OfUsers(ctx context.Context, userIDs []string) (map[string][]PushDevice, error) {
	out := map[string][]PushDevice{}
	for start := 0; start < len(userIDs); start += rowChunk {
		var rows []pushDeviceRow
		chunk := userIDs[start:min(start+rowChunk, len(userIDs))]
		if err := r.db.Gorm.WithContext(ctx).Where("user_id IN ?", chunk).Order("id").Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("push devices of %d users: %w", len(chunk), err)
		}
		for _, row := range rows {
			out[row.UserID] = append(out[row.UserID], row.device())
		}
	}
	return out, nil
}

// Delete removes userID's device id: domain.ErrPushDeviceNotFound when
// userID has no such device (another user's included).
func (r *PushDeviceRepo) Delete(ctx context.Context, userID, id string) error {
	res := r.db.Gorm.WithContext(ctx).Where("id = ? AND user_id = ?", id, userID).Delete(&pushDeviceRow{})
	if res.Error != nil {
		return fmt.Errorf("delete push device %s: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.ErrPushDeviceNotFound
	}
	return nil
}

// DeletePlatform removes userID's devices registered from platformID
// (logout of that platform); platformID 0 removes them all (account
// deletion).
func (r *PushDeviceRepo) DeletePlatform(ctx context.Context, userID string, platformID int) (int64, error) {
	q := r.db.Gorm.WithContext(ctx).Where("user_id = ?", userID)
	if platformID != 0 {
		q = q.Where("platform_id = ?", platformID)
	}
	res := q.Delete(&pushDeviceRow{})
	if res.Error != nil {
		return 0, fmt.Errorf("delete push devices of %s: %w", userID, res.Error)
	}
	return res.RowsAffected, nil
}

// DeleteGone removes the device id if it still holds token (the provider
// said the token is gone; a re-registration since with a fresh token is
// kept).
func (r *PushDeviceRepo) DeleteGone(ctx context.Context, id, token string) error {
	err := r.db.Gorm.WithContext(ctx).Where("id = ? AND token_hash = ?", id, tokenHash(token)).Delete(&pushDeviceRow{}).Error
	if err != nil {
		return fmt.Errorf("delete gone push device %s: %w", id, err)
	}
	return nil
}

// pushMentionsOnlyRow: UserID is notified of ConversationID's messages
// only when they mention them (a group "muted except for mentions").
type pushMentionsOnlyRow struct {
	UserID         string `gorm:"column:user_id;type:varchar(64);primaryKey"`
	ConversationID string `gorm:"column:conversation_id;type:varchar(128);primaryKey;index:idx_push_mo_conv"`
	CreatedAt      int64  `gorm:"column:created_at;not null;autoCreateTime:false"`
}

func (pushMentionsOnlyRow) TableName() string { return "push_mentions_only" }

// SetMentionsOnly turns userID's mentions-only push for conversationID on
// or off; setting what is set changes nothing.
func (r *PushDeviceRepo) SetMentionsOnly(ctx context.Context, userID, conversationID string, on bool) error {
	q := r.db.Gorm.WithContext(ctx)
	var err error
	if on {
		err = q.Clauses(clause.OnConflict{DoNothing: true}).Create(&pushMentionsOnlyRow{UserID: userID, ConversationID: conversationID, CreatedAt: nowMillis()}).Error
	} else {
		err = q.Where("user_id = ? AND conversation_id = ?", userID, conversationID).Delete(&pushMentionsOnlyRow{}).Error
	}
	if err != nil {
		return fmt.Errorf("push mentions-only of %s in %s: %w", userID, conversationID, err)
	}
	return nil
}

// MentionsOnlyOf lists userID's mentions-only conversations.
func (r *PushDeviceRepo) MentionsOnlyOf(ctx context.Context, userID string) ([]string, error) {
	var ids []string
	err := r.db.Gorm.WithContext(ctx).Model(&pushMentionsOnlyRow{}).Where("user_id = ?", userID).Order("conversation_id").Pluck("conversation_id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("push mentions-only of %s: %w", userID, err)
	}
	return ids, nil
}

// MentionsOnly returns which of userIDs set conversationID to
// mentions-only.
func (r *PushDeviceRepo) MentionsOnly(ctx context.Context, conversationID string, userIDs []string) (map[string]bool, error) {
	out := map[string]bool{}
	for start := 0; start < len(userIDs); start += rowChunk {
		var ids []string
		chunk := userIDs[start:min(start+rowChunk, len(userIDs))]
		err := r.db.Gorm.WithContext(ctx).Model(&pushMentionsOnlyRow{}).Where("conversation_id = ? AND user_id IN ?", conversationID, chunk).
			Pluck("user_id", &ids).Error
		if err != nil {
			return nil, fmt.Errorf("push mentions-only in %s: %w", conversationID, err)
		}
		for _, id := range ids {
			out[id] = true
		}
	}
	return out, nil
}
