package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// UserRepo stores users. It takes and returns domain.User; times are Unix
// milliseconds set by the repository.
type UserRepo struct {
	db *DB
}

// NewUserRepo returns the user repository on db.
func NewUserRepo(db *DB) *UserRepo { return &UserRepo{db: db} }

// existingChunk bounds the IN list of one Existing query.
const existingChunk = 500

// Create inserts u with CreatedAt = UpdatedAt = now and returns the stored
// user. A taken ID is domain.ErrUserExists, also when it differs from the
// taken one only in letter case (unique on id_norm), and the ID of a
// deleted account (store.PrivacyRepo.EraseUser). Field lengths are the caller's
// to check (domain.MaxNicknameLen, ...); the schema refuses longer values
// on MySQL.
func (r *UserRepo) Create(ctx context.Context, u domain.User) (domain.User, error) {
	now := nowMillis()
	norm := domain.NormalizeUserID(u.ID)
	// A deleted account's ID stays reserved (docs/privacy.md).
	if taken, err := reserved(r.db.Gorm.WithContext(ctx), u.ID); err != nil {
		return domain.User{}, err
	} else if taken {
		return domain.User{}, fmt.Errorf("create user %q: reserved by a deleted account: %w", u.ID, domain.ErrUserExists)
	}
	row := userRow{ID: u.ID, IDNorm: &norm, Nickname: u.Nickname, Avatar: u.Avatar, PasswordHash: u.PasswordHash,
		GroupInvites: string(u.GroupInvites.OrDefault()), DMPolicy: string(u.DMPolicy.OrDefault()), CreatedAt: now, UpdatedAt: now}
	err := mapErr(r.db.Gorm.WithContext(ctx).Create(&row).Error, domain.ErrUserNotFound)
	if errors.Is(err, domain.ErrDuplicate) {
		return domain.User{}, fmt.Errorf("create user %q: %w", u.ID, domain.ErrUserExists)
	}
	if err != nil {
		return domain.User{}, fmt.Errorf("create user %q: %w", u.ID, err)
	}
	return row.toDomain(), nil
}

// Get returns the user with exactly this ID, or domain.ErrUserNotFound.
func (r *UserRepo) Get(ctx context.Context, id string) (domain.User, error) {
	var row userRow
	err := mapErr(r.db.Gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error, domain.ErrUserNotFound)
	// MySQL's default collation compares case-insensitively: "ALICE" would
	// find "alice". IDs are case-sensitive, so only an exact match counts.
	if err == nil && row.ID != id {
		err = domain.ErrUserNotFound
	}
	if err != nil {
		return domain.User{}, fmt.Errorf("get user %q: %w", id, err)
	}
	return row.toDomain(), nil
}

// UserUpdate is a change of a user's profile: the fields that are not nil
// are set.
type UserUpdate struct {
	Nickname     *string
	Avatar       *string
	GroupInvites *domain.GroupInvites
	DMPolicy     *domain.DMPolicy
}

// Update sets the fields of u that are not nil and updated_at, and returns
// the user as stored. An unknown ID is domain.ErrUserNotFound. With every
// field nil it only returns the user.
func (r *UserRepo) Update(ctx context.Context, id string, u UserUpdate) (domain.User, error) {
	set := map[string]any{}
	if u.Nickname != nil {
		set["nickname"] = *u.Nickname
	}
	if u.Avatar != nil {
		set["avatar"] = *u.Avatar
	}
	if u.GroupInvites != nil {
		set["group_invites"] = string(u.GroupInvites.OrDefault())
	}
	if u.DMPolicy != nil {
		set["dm_policy"] = string(u.DMPolicy.OrDefault())
	}
	if len(set) == 0 {
		return r.Get(ctx, id)
	}
	set["updated_at"] = nowMillis()
	// Read first: RowsAffected cannot tell a missing row from an unchanged
	// one on MySQL, and the read also applies Get's exact-ID rule.
	if _, err := r.Get(ctx, id); err != nil {
		return domain.User{}, err
	}
	res := r.db.Gorm.WithContext(ctx).Model(&userRow{}).Where("id = ?", id).Updates(set)
	if res.Error != nil {
		return domain.User{}, fmt.Errorf("update user %q: %w", id, mapErr(res.Error, domain.ErrUserNotFound))
	}
	return r.Get(ctx, id)
}

// SetPassword replaces the password hash of user id (and updated_at). An
// unknown ID is domain.ErrUserNotFound.
func (r *UserRepo) SetPassword(ctx context.Context, id, hash string) error {
	if _, err := r.Get(ctx, id); err != nil {
		return err
	}
	err := r.db.Gorm.WithContext(ctx).Model(&userRow{}).Where("id = ?", id).
		Updates(map[string]any{"password_hash": hash, "updated_at": nowMillis()}).Error
	if err != nil {
		return fmt.Errorf("set password of %q: %w", id, err)
	}
	return nil
}

// Existing reports which of ids are registered users: the result holds
// true for each one that exists (exact match) and no entry for the others.
// Duplicates in ids are fine; an empty ids gives an empty map.
func (r *UserRepo) Existing(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	for start := 0; start < len(ids); start += existingChunk {
		chunk := ids[start:min(start+existingChunk, len(ids))]
		var found []string
		err := r.db.Gorm.WithContext(ctx).Model(&userRow{}).Where("id IN ?", chunk).Pluck("id", &found).Error
		if err != nil {
			return nil, fmt.Errorf("check %d user ids: %w", len(chunk), err)
		}
		for _, id := range found {
			if want[id] {
				out[id] = true
			}
		}
	}
	return out, nil
}

func (row userRow) toDomain() domain.User {
	return domain.User{
		ID: row.ID, Nickname: row.Nickname, Avatar: row.Avatar, PasswordHash: row.PasswordHash,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt, Disabled: row.DisabledAt != 0,
		GroupInvites: domain.GroupInvites(row.GroupInvites).OrDefault(),
		DMPolicy:     domain.DMPolicy(row.DMPolicy).OrDefault(),
	}
}

// SetDisabled disables or enables the user and returns it as stored; an
// unknown ID is domain.ErrUserNotFound.
func (r *UserRepo) SetDisabled(ctx context.Context, id string, disabled bool) (domain.User, error) {
	if _, err := r.Get(ctx, id); err != nil {
		return domain.User{}, err
	}
	at := int64(0)
	if disabled {
		at = nowMillis()
	}
	err := r.db.Gorm.WithContext(ctx).Model(&userRow{}).Where("id = ?", id).
		Updates(map[string]any{"disabled_at": at, "updated_at": nowMillis()}).Error
	if err != nil {
		return domain.User{}, fmt.Errorf("disable user %q: %w", id, err)
	}
	return r.Get(ctx, id)
}

// Delete removes the user's account row; an unknown ID is
// domain.ErrUserNotFound. Messages, memberships and conversations stay (a
// group keeps its history); the ID may be registered again later.
func (r *UserRepo) Delete(ctx context.Context, id string) error {
	if _, err := r.Get(ctx, id); err != nil {
		return err
	}
	if err := r.db.Gorm.WithContext(ctx).Where("id = ?", id).Delete(&userRow{}).Error; err != nil {
		return fmt.Errorf("delete user %q: %w", id, err)
	}
	return nil
}

// GroupInvites returns the group_invites choice of each of ids that exists
// (exact match); absent ids are not registered.
func (r *UserRepo) GroupInvites(ctx context.Context, ids []string) (map[string]domain.GroupInvites, error) {
	out := make(map[string]domain.GroupInvites, len(ids))
	for start := 0; start < len(ids); start += existingChunk {
		chunk := ids[start:min(start+existingChunk, len(ids))]
		var rows []userRow
		err := r.db.Gorm.WithContext(ctx).Select("id", "group_invites").Where("id IN ?", chunk).Find(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("group_invites of %d users: %w", len(chunk), err)
		}
		for _, row := range rows {
			out[row.ID] = domain.GroupInvites(row.GroupInvites).OrDefault()
		}
	}
	return out, nil
}

// DMPolicy returns id's dm_policy choice; an unknown id is
// domain.ErrUserNotFound.
func (r *UserRepo) DMPolicy(ctx context.Context, id string) (domain.DMPolicy, error) {
	var rows []userRow
	if err := r.db.Gorm.WithContext(ctx).Select("id", "dm_policy").Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return "", fmt.Errorf("dm_policy of %s: %w", id, err)
	}
	if len(rows) == 0 {
		return "", fmt.Errorf("dm_policy of %s: %w", id, domain.ErrUserNotFound)
	}
	return domain.DMPolicy(rows[0].DMPolicy).OrDefault(), nil
}

// Nicknames returns the nickname of each of ids that exists (exact match).
func (r *UserRepo) Nicknames(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	for start := 0; start < len(ids); start += existingChunk {
		chunk := ids[start:min(start+existingChunk, len(ids))]
		var rows []userRow
		err := r.db.Gorm.WithContext(ctx).Select("id", "nickname").Where("id IN ?", chunk).Find(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("nicknames of %d users: %w", len(chunk), err)
		}
		for _, row := range rows {
			out[row.ID] = row.Nickname
		}
	}
	return out, nil
}
