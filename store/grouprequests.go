package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/nexo-im/nexo/domain"
)

// The join applications of approval groups (table group_requests, one row
// per group and user). The rules — who may apply, who may answer — are the
// group service's; callers hold the group's management lock.

// Apply records userID's application to join the group and returns it.
// A pending application is returned as it is (created = false: applying
// twice is one application); one already answered is replaced by a new
// pending one, so it is listed again after the applications made since.
func (r *GroupRepo) Apply(ctx context.Context, a domain.GroupApplication) (stored domain.GroupApplication, created bool, err error) {
	now := nowMillis()
	err = r.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var old groupRequestRow
		err := tx.Where("group_id = ? AND user_id = ?", a.GroupID, a.UserID).Take(&old).Error
		switch {
		case err == nil && old.HandleResult == int(domain.ApplicationPending):
			stored = old.toDomain()
			return nil
		case err == nil:
			if err := tx.Delete(&groupRequestRow{}, old.ID).Error; err != nil {
				return err
			}
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return err
		}
		row := groupRequestRow{GroupID: a.GroupID, UserID: a.UserID, ReqMsg: a.ReqMsg, CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&row).Error; err != nil {
			return mapErr(err, domain.ErrNotFound)
		}
		stored, created = row.toDomain(), true
		return nil
	})
	if err != nil {
		return domain.GroupApplication{}, false, fmt.Errorf("application of %s to %s: %w", a.UserID, a.GroupID, err)
	}
	return stored, created, nil
}

// PendingApplication returns userID's pending application to the group, or
// domain.ErrNotFound when there is none (never made, or already answered).
func (r *GroupRepo) PendingApplication(ctx context.Context, groupID, userID string) (domain.GroupApplication, error) {
	var row groupRequestRow
	err := r.db.Gorm.WithContext(ctx).Where("group_id = ? AND user_id = ? AND handle_result = ?",
		groupID, userID, int(domain.ApplicationPending)).Take(&row).Error
	if err = mapErr(err, domain.ErrNotFound); err != nil {
		return domain.GroupApplication{}, fmt.Errorf("pending application of %s to %s: %w", userID, groupID, err)
	}
	return row.toDomain(), nil
}

// PendingApplications returns up to limit pending applications to the
// group with an ID above afterID, oldest first (keyset paging: pass the
// last ID of one page to get the next).
func (r *GroupRepo) PendingApplications(ctx context.Context, groupID string, afterID int64, limit int) ([]domain.GroupApplication, error) {
	var rows []groupRequestRow
	err := r.db.Gorm.WithContext(ctx).Where("group_id = ? AND handle_result = ? AND id > ?",
		groupID, int(domain.ApplicationPending), afterID).Order("id ASC").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("pending applications of %s: %w", groupID, err)
	}
	out := make([]domain.GroupApplication, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// AnswerApplication marks userID's pending application to the group
// accepted or rejected by handler. domain.ErrNotFound when none is pending.
func (r *GroupRepo) AnswerApplication(ctx context.Context, groupID, userID, handler string, result domain.ApplicationStatus) error {
	now := nowMillis()
	res := r.db.Gorm.WithContext(ctx).Model(&groupRequestRow{}).
		Where("group_id = ? AND user_id = ? AND handle_result = ?", groupID, userID, int(domain.ApplicationPending)).
		Updates(map[string]any{"handle_result": int(result), "handler_user_id": handler, "handled_at": now, "updated_at": now})
	if res.Error != nil {
		return fmt.Errorf("answer application of %s to %s: %w", userID, groupID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("application of %s to %s: %w", userID, groupID, domain.ErrNotFound)
	}
	return nil
}

func (row groupRequestRow) toDomain() domain.GroupApplication {
	return domain.GroupApplication{ID: row.ID, GroupID: row.GroupID, UserID: row.UserID, ReqMsg: row.ReqMsg,
		Status: domain.ApplicationStatus(row.HandleResult), HandlerUserID: row.HandlerUserID,
		CreatedAt: row.CreatedAt, HandledAt: row.HandledAt}
}
