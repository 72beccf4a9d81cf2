package store

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// SearchUsers returns up to limit enabled users whose user_id starts with
// keyword or whose nickname contains it (case-insensitive on MySQL's
// collation and for ASCII on SQLite), by user_id.
func (r *SearchRepo) SearchUsers(ctx context.Context, keyword string, limit int) ([]domain.User, error) {
	esc := r.escapeClause()
	var rows []userRow
	err := r.db.Gorm.WithContext(ctx).
		Where("disabled_at = 0 AND (id LIKE ? "+esc+" OR nickname LIKE ? "+esc+")", prefixPattern(keyword), likePattern(keyword)).
		Order("id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("search users: %w", err)
	}
	out := make([]domain.User, len(rows))
	for i := range rows {
		out[i] = domain.User{ID: rows[i].ID, Nickname: rows[i].Nickname, Avatar: rows[i].Avatar,
			CreatedAt: rows[i].CreatedAt, UpdatedAt: rows[i].UpdatedAt}
	}
	return out, nil
}

// SearchGroups returns up to limit groups whose name contains keyword and
// that userID can see or join: not dismissed, and userID an active member
// or the group open to joining (joinable lists the join policies that
// let anyone join or apply), by group id.
func (r *SearchRepo) SearchGroups(ctx context.Context, userID, keyword string, joinable []string, limit int) ([]domain.Group, error) {
	var rows []groupRow
	err := r.db.Gorm.WithContext(ctx).Table("`groups` AS g").Select("g.*").
		Where("g.status = ? AND g.name LIKE ? "+r.escapeClause(), int(domain.GroupNormal), likePattern(keyword)).
		Where("(g.join_policy IN ? OR EXISTS (SELECT 1 FROM group_members gm WHERE gm.group_id = g.id AND gm.user_id = ? AND gm.status = ?))",
			joinable, userID, int(domain.MemberNormal)).
		Order("g.id").Limit(limit).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("search groups: %w", err)
	}
	out := make([]domain.Group, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// escapeClause is LIKE's ESCAPE '\' in the dialect's string syntax.
func (r *SearchRepo) escapeClause() string {
	if r.db.Dialect == SQLite {
		return `ESCAPE '\'`
	}
	return `ESCAPE '\\'`
}

// prefixPattern is keyword% with LIKE's wildcards taken literally.
func prefixPattern(keyword string) string {
	p := likePattern(keyword)
	return p[1:]
}
