package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/nexo-im/nexo/domain"
)

// objectRow (migration 13) is one uploaded object (docs/media.md).
type objectRow struct {
	ID          string `gorm:"column:id;type:varchar(40);primaryKey"`
	OwnerID     string `gorm:"column:owner_id;type:varchar(64);not null;index:idx_objects_owner"`
	Purpose     string `gorm:"column:purpose;type:varchar(16);not null"`
	StorageKey  string `gorm:"column:storage_key;type:varchar(128);not null"`
	Name        string `gorm:"column:name;type:varchar(255);not null;default:''"`
	ContentType string `gorm:"column:content_type;type:varchar(128);not null;default:''"`
	Size        int64  `gorm:"column:size;not null;default:0"`
	SHA256      string `gorm:"column:sha256;type:varchar(64);not null;default:''"`
	Width       int    `gorm:"column:width;not null;default:0"`
	Height      int    `gorm:"column:height;not null;default:0"`
	State       string `gorm:"column:state;type:varchar(16);not null"`
	Thumb       string `gorm:"column:thumb;type:varchar(16);not null;default:'none'"`
	UploadID    string `gorm:"column:upload_id;type:varchar(256);not null;default:''"`
	PartSize    int64  `gorm:"column:part_size;not null;default:0"`
	CreatedAt   int64  `gorm:"column:created_at;not null;autoCreateTime:false;index:idx_objects_created"`
}

func (objectRow) TableName() string { return "objects" }

// objectRefRow (migration 13) is one message carrying an object.
type objectRefRow struct {
	ObjectID       string `gorm:"column:object_id;type:varchar(40);primaryKey"`
	ConversationID string `gorm:"column:conversation_id;type:varchar(256);primaryKey;index:idx_object_refs_conv"`
	Seq            int64  `gorm:"column:seq;primaryKey;autoIncrement:false"`
	ServerMsgID    string `gorm:"column:server_msg_id;type:varchar(64);not null"`
	CreatedAt      int64  `gorm:"column:created_at;not null;autoCreateTime:false"`
}

func (objectRefRow) TableName() string { return "object_refs" }

// migrateObjects is migration 13 (docs/media.md): the objects and
// object_refs tables. A multipart upload is an objects row in state
// "uploading" (its upload_id names the backend's upload).
func migrateObjects(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	for _, t := range []any{&objectRow{}, &objectRefRow{}} {
		if m.HasTable(t) {
			continue
		}
		if err := m.CreateTable(t); err != nil {
			return fmt.Errorf("create %T: %w", t, err)
		}
	}
	return nil
}

// migrateObjectRefsByMessage is migration 16 (docs/media.md,
// "Lifecycle"): an index on object_refs (conversation_id, seq), so that
// deleting the refs of a batch of deleted messages (retention, erasure)
// seeks each message's refs instead of scanning every ref of its
// conversation.
func migrateObjectRefsByMessage(tx *gorm.DB, _ Dialect) error {
	if tx.Migrator().HasIndex(&objectRefRow{}, "idx_object_refs_msg") {
		return nil
	}
	if err := tx.Exec("CREATE INDEX idx_object_refs_msg ON object_refs (conversation_id, seq)").Error; err != nil {
		return fmt.Errorf("create idx_object_refs_msg: %w", err)
	}
	return nil
}

// ObjectRepo stores objects and the messages that reference them.
type ObjectRepo struct{ db *DB }

// NewObjectRepo returns the object store on db.
func NewObjectRepo(db *DB) *ObjectRepo { return &ObjectRepo{db: db} }

func toObjectRow(o *domain.Object) objectRow {
	return objectRow{ID: o.ID, OwnerID: o.OwnerID, Purpose: o.Purpose, StorageKey: o.Key, Name: o.Name,
		ContentType: o.ContentType, Size: o.Size, SHA256: o.SHA256, Width: o.Width, Height: o.Height,
		State: string(o.State), Thumb: string(o.Thumb), UploadID: o.UploadID, PartSize: o.PartSize, CreatedAt: o.CreatedAt}
}

func (r objectRow) domain() domain.Object {
	return domain.Object{ID: r.ID, OwnerID: r.OwnerID, Purpose: r.Purpose, Key: r.StorageKey, Name: r.Name,
		ContentType: r.ContentType, Size: r.Size, SHA256: r.SHA256, Width: r.Width, Height: r.Height,
		State: domain.ObjectState(r.State), Thumb: domain.ThumbState(r.Thumb), UploadID: r.UploadID,
		PartSize: r.PartSize, CreatedAt: r.CreatedAt}
}

// Create inserts o (its ID must be new).
func (r *ObjectRepo) Create(ctx context.Context, o *domain.Object) error {
	row := toObjectRow(o)
	if err := r.db.Gorm.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("create object %s: %w", o.ID, err)
	}
	return nil
}

// Get returns the object id, or domain.ErrObjectNotFound.
func (r *ObjectRepo) Get(ctx context.Context, id string) (domain.Object, error) {
	var row objectRow
	err := r.db.Gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.Object{}, fmt.Errorf("object %s: %w", id, domain.ErrObjectNotFound)
	}
	if err != nil {
		return domain.Object{}, fmt.Errorf("object %s: %w", id, err)
	}
	return row.domain(), nil
}

// Complete stores the checked metadata of an uploading object and marks it
// complete; domain.ErrUploadNotFound when it is no longer uploading (a
// concurrent completion or abort won).
func (r *ObjectRepo) Complete(ctx context.Context, o *domain.Object) error {
	res := r.db.Gorm.WithContext(ctx).Model(&objectRow{}).Where("id = ? AND state = ?", o.ID, string(domain.ObjectUploading)).
		Updates(map[string]any{"content_type": o.ContentType, "size": o.Size, "sha256": o.SHA256, "width": o.Width,
			"height": o.Height, "thumb": string(o.Thumb), "state": string(domain.ObjectComplete), "upload_id": ""})
	if res.Error != nil {
		return fmt.Errorf("complete object %s: %w", o.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("object %s: %w", o.ID, domain.ErrUploadNotFound)
	}
	return nil
}

// Touch restarts an object's orphan clock (created_at, Unix ms): a send
// that carries it is not saved yet, and the cleaner must not take it
// meanwhile.
func (r *ObjectRepo) Touch(ctx context.Context, id string, at int64) error {
	err := r.db.Gorm.WithContext(ctx).Model(&objectRow{}).Where("id = ? AND created_at < ?", id, at).Update("created_at", at).Error
	if err != nil {
		return fmt.Errorf("touch object %s: %w", id, err)
	}
	return nil
}

// SetThumb records an object's thumbnail state.
func (r *ObjectRepo) SetThumb(ctx context.Context, id string, t domain.ThumbState) error {
	err := r.db.Gorm.WithContext(ctx).Model(&objectRow{}).Where("id = ?", id).Update("thumb", string(t)).Error
	if err != nil {
		return fmt.Errorf("object %s thumb: %w", id, err)
	}
	return nil
}

// Delete removes the object row and its references.
func (r *ObjectRepo) Delete(ctx context.Context, id string) error {
	return r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("object_id = ?", id).Delete(&objectRefRow{}).Error; err != nil {
			return fmt.Errorf("delete refs of %s: %w", id, err)
		}
		if err := tx.Where("id = ?", id).Delete(&objectRow{}).Error; err != nil {
			return fmt.Errorf("delete object %s: %w", id, err)
		}
		return nil
	})
}

// UsedBytes is what owner's objects take, uploads in progress counted at
// their declared size.
func (r *ObjectRepo) UsedBytes(ctx context.Context, owner string) (int64, error) {
	var n *int64
	err := r.db.Gorm.WithContext(ctx).Model(&objectRow{}).Where("owner_id = ?", owner).Select("SUM(size)").Scan(&n).Error
	if err != nil {
		return 0, fmt.Errorf("bytes of %s: %w", owner, err)
	}
	if n == nil {
		return 0, nil
	}
	return *n, nil
}

// TotalBytes is what every complete object takes (the stored-bytes gauge).
func (r *ObjectRepo) TotalBytes(ctx context.Context) (int64, error) {
	var n *int64
	err := r.db.Gorm.WithContext(ctx).Model(&objectRow{}).Where("state = ?", string(domain.ObjectComplete)).Select("SUM(size)").Scan(&n).Error
	if err != nil {
		return 0, fmt.Errorf("total object bytes: %w", err)
	}
	if n == nil {
		return 0, nil
	}
	return *n, nil
}

// AddRef records that a message carries an object; recording it again is
// a no-op.
func (r *ObjectRepo) AddRef(ctx context.Context, ref domain.ObjectRef) error {
	row := objectRefRow{ObjectID: ref.ObjectID, ConversationID: ref.ConversationID, Seq: ref.Seq, ServerMsgID: ref.ServerMsgID, CreatedAt: nowMillis()}
	err := r.db.Gorm.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("ref %s from %s/%d: %w", ref.ObjectID, ref.ConversationID, ref.Seq, err)
	}
	return nil
}

// Refs lists the messages that carry an object (at most limit, oldest first).
func (r *ObjectRepo) Refs(ctx context.Context, objectID string, limit int) ([]domain.ObjectRef, error) {
	var rows []objectRefRow
	err := r.db.Gorm.WithContext(ctx).Where("object_id = ?", objectID).Order("created_at, conversation_id, seq").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("refs of %s: %w", objectID, err)
	}
	out := make([]domain.ObjectRef, len(rows))
	for i, row := range rows {
		out[i] = domain.ObjectRef{ObjectID: row.ObjectID, ConversationID: row.ConversationID, Seq: row.Seq, ServerMsgID: row.ServerMsgID}
	}
	return out, nil
}

// InConversation reports whether a message of conversationID carries the
// object.
func (r *ObjectRepo) InConversation(ctx context.Context, objectID, conversationID string) (bool, error) {
	var n int64
	err := r.db.Gorm.WithContext(ctx).Model(&objectRefRow{}).Where("object_id = ? AND conversation_id = ?", objectID, conversationID).Limit(1).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("refs of %s in %s: %w", objectID, conversationID, err)
	}
	return n > 0, nil
}

// Orphans lists up to limit message objects created before the cutoff
// (Unix ms) that no readable message carries: complete ones never sent,
// whose every message was recalled, or with no ref left (retention and
// erasure delete a message's refs with it, PrivacyRepo.deleteKeys), and
// multipart uploads never completed. Avatars are never listed.
func (r *ObjectRepo) Orphans(ctx context.Context, before int64, limit int) ([]domain.Object, error) {
	var rows []objectRow
	err := r.db.Gorm.WithContext(ctx).Where("created_at < ? AND (purpose = ? OR state = ?)", before, domain.PurposeMessage, string(domain.ObjectUploading)).
		Where(`NOT EXISTS (SELECT 1 FROM object_refs JOIN messages ON messages.conversation_id = object_refs.conversation_id
			AND messages.seq = object_refs.seq AND messages.status = ? WHERE object_refs.object_id = objects.id)`, msgStatusNormal).
		Order("created_at").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("orphan objects: %w", err)
	}
	out := make([]domain.Object, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// Uncarried lists up to limit objects of owner that no message carries (no
// object_refs row): avatars, uploads never sent and multipart uploads in
// progress, oldest first. Account deletion erases them (docs/privacy.md).
func (r *ObjectRepo) Uncarried(ctx context.Context, owner string, limit int) ([]domain.Object, error) {
	var rows []objectRow
	err := r.db.Gorm.WithContext(ctx).Where("owner_id = ?", owner).
		Where("NOT EXISTS (SELECT 1 FROM object_refs WHERE object_refs.object_id = objects.id)").
		Order("created_at").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("uncarried objects of %s: %w", owner, err)
	}
	out := make([]domain.Object, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// PendingThumbs lists up to limit objects created before the cutoff whose
// thumbnail is still pending (the stage that should have made it died).
func (r *ObjectRepo) PendingThumbs(ctx context.Context, before int64, limit int) ([]domain.Object, error) {
	var rows []objectRow
	err := r.db.Gorm.WithContext(ctx).Where("thumb = ? AND state = ? AND created_at < ?", string(domain.ThumbPending), string(domain.ObjectComplete), before).
		Order("created_at").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("pending thumbnails: %w", err)
	}
	out := make([]domain.Object, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}
