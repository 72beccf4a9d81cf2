package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/nexo-im/nexo/domain"
)

// migration is one versioned schema step. Up must be idempotent: it may run
// again after a crash between the step and its schema_migrations row, so it
// checks before it adds (see docs/schema.md for how changes are rolled out).
type migration struct {
	Version int
	Name    string
	Up      func(tx *gorm.DB, d Dialect) error
}

// migrations is the ordered history. Append only: never edit a released step.
var migrations = []migration{
	{1, "base schema", func(tx *gorm.DB, d Dialect) error {
		return tx.AutoMigrate(allModels()...)
	}},
	{3, "sync: hidden conversations, latest message time, mentions, revoke intents", migrateSync},
	{4, "integration: users.disabled_at (server API disable)", migrateUserDisabled},
	{5, "users.id_norm: user IDs unique without letter case", migrateUserIDNorm},
	{6, "groups: invite_permission, group_requests (join applications)", migrateGroupRequests},
	{7, "users.group_invites (who may add a user to groups)", migrateGroupInvites},
	{8, "deployment: the database's identity and the Redis key prefix it belongs to", migrateDeployment},
	{9, "users.dm_policy, user_blocks (who may write to a user)", migrateBlocks},
	{10, "groups.muted, group_members.mute_until (group moderation)", migrateGroupMutes},
	{11, "message_reports (reports of messages, docs/moderation.md)", migrateReports},
	{12, "message actions: edits, hidden messages, reactions, read-by index", migrateActions},
	{13, "objects, object_refs (uploads, docs/media.md)", migrateObjects},
	{15, "deleted_users, conversation_retention, conversations.cleared_seq (data rights)", migratePrivacy},
	{16, "object_refs (conversation_id, seq) index: refs deleted with their messages", migrateObjectRefsByMessage},
}

// migrateReports is migration 11 (docs/moderation.md, "Reports"): the
// message_reports table.
func migrateReports(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	if m.HasTable(&reportRow{}) {
		return nil
	}
	if err := m.CreateTable(&reportRow{}); err != nil {
		return fmt.Errorf("create message_reports: %w", err)
	}
	return nil
}

// migrateGroupMutes is migration 10 (docs/moderation.md): groups.muted
// (false) and group_members.mute_until (0) for every existing row. Bans
// are a member status (3) and need no column.
func migrateGroupMutes(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	if !m.HasColumn(&groupRow{}, "Muted") {
		if err := m.AddColumn(&groupRow{}, "Muted"); err != nil {
			return fmt.Errorf("add groups.muted: %w", err)
		}
	}
	if !m.HasColumn(&groupMemberRow{}, "MuteUntil") {
		if err := m.AddColumn(&groupMemberRow{}, "MuteUntil"); err != nil {
			return fmt.Errorf("add group_members.mute_until: %w", err)
		}
	}
	return nil
}

// migrateBlocks is migration 9 (docs/moderation.md): users.dm_policy,
// 'everyone' for every existing user, and the user_blocks table.
func migrateBlocks(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	if !m.HasColumn(&userRow{}, "DMPolicy") {
		if err := m.AddColumn(&userRow{}, "DMPolicy"); err != nil {
			return fmt.Errorf("add users.dm_policy: %w", err)
		}
	}
	if m.HasTable(&blockRow{}) {
		return nil
	}
	if err := m.CreateTable(&blockRow{}); err != nil {
		return fmt.Errorf("create user_blocks: %w", err)
	}
	return nil
}

// migrateGroupInvites is migration 7 (docs/groups.md): users.group_invites,
// 'everyone' for every existing user.
func migrateGroupInvites(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	if m.HasColumn(&userRow{}, "GroupInvites") {
		return nil
	}
	if err := m.AddColumn(&userRow{}, "GroupInvites"); err != nil {
		return fmt.Errorf("add users.group_invites: %w", err)
	}
	return nil
}

// migrateDeployment is migration 8 (docs/operations.md, "One database, one
// key prefix"): the one-row table the first start fills (deployment.go).
func migrateDeployment(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	if m.HasTable(&deploymentRow{}) {
		return nil
	}
	if err := m.CreateTable(&deploymentRow{}); err != nil {
		return fmt.Errorf("create deployment: %w", err)
	}
	return nil
}

// migrateGroupRequests is migration 6 (docs/groups.md):
// the per-group invite permission and the join applications of approval
// groups, each added only when missing.
func migrateGroupRequests(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	if !m.HasColumn(&groupRow{}, "InvitePermission") {
		if err := m.AddColumn(&groupRow{}, "InvitePermission"); err != nil {
			return fmt.Errorf("add groups.invite_permission: %w", err)
		}
	}
	if !m.HasTable(&groupRequestRow{}) {
		if err := m.CreateTable(&groupRequestRow{}); err != nil {
			return fmt.Errorf("create group_requests: %w", err)
		}
	}
	return nil
}

// migrateUserDisabled is migration 4 (docs/integration.md).
func migrateUserDisabled(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	if m.HasColumn(&userRow{}, "DisabledAt") {
		return nil
	}
	if err := m.AddColumn(&userRow{}, "DisabledAt"); err != nil {
		return fmt.Errorf("add column disabled_at: %w", err)
	}
	return nil
}

// migrateSync is migration 3 (docs/sync.md): two columns and two tables,
// each added only when missing so the step can run again.
func migrateSync(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	for _, c := range []struct {
		model any
		field string
	}{{&conversationRow{}, "HiddenSeq"}, {&seqConversationRow{}, "LatestSendAt"}} {
		if m.HasColumn(c.model, c.field) {
			continue
		}
		if err := m.AddColumn(c.model, c.field); err != nil {
			return fmt.Errorf("add column %s: %w", c.field, err)
		}
	}
	for _, t := range []any{&mentionRow{}, &revokeIntentRow{}} {
		if m.HasTable(t) {
			continue
		}
		if err := m.CreateTable(t); err != nil {
			return fmt.Errorf("create table: %w", err)
		}
	}
	return nil
}

// migrateUserIDNorm is migration 5 (docs/schema.md): users.id_norm,
// filled with the lower-case ID, then a unique index on it. Accounts that
// already clash without letter case (possible on SQLite, whose id compares
// case-sensitively; MySQL's collation already refused them) all keep
// working: the oldest gets id_norm, the later ones keep NULL, which the
// unique index allows. From now on nobody registers a case variant of any
// of them. Re-runnable: every step checks first.
func migrateUserIDNorm(tx *gorm.DB, _ Dialect) error {
	m := tx.Migrator()
	if !m.HasColumn(&userRow{}, "IDNorm") {
		if err := m.AddColumn(&userRow{}, "IDNorm"); err != nil {
			return fmt.Errorf("add users.id_norm: %w", err)
		}
	}
	var rows []struct {
		ID     string
		IDNorm *string
	}
	if err := tx.Model(&userRow{}).Select("id, id_norm").Order("created_at, id").Find(&rows).Error; err != nil {
		return fmt.Errorf("read user ids: %w", err)
	}
	taken := make(map[string]bool, len(rows))
	for _, r := range rows {
		if r.IDNorm != nil {
			taken[*r.IDNorm] = true
		}
	}
	for _, r := range rows {
		norm := domain.NormalizeUserID(r.ID)
		if r.IDNorm != nil || taken[norm] {
			continue
		}
		taken[norm] = true
		if err := tx.Model(&userRow{}).Where("id = ?", r.ID).Update("id_norm", norm).Error; err != nil {
			return fmt.Errorf("fill users.id_norm of %q: %w", r.ID, err)
		}
	}
	if !m.HasIndex(&userRow{}, "uk_users_id_norm") {
		if err := m.CreateIndex(&userRow{}, "uk_users_id_norm"); err != nil {
			return fmt.Errorf("create uk_users_id_norm: %w", err)
		}
	}
	return nil
}

type schemaMigrationRow struct {
	Version   int    `gorm:"column:version;primaryKey;autoIncrement:false"`
	Name      string `gorm:"column:name;type:varchar(128);not null"`
	AppliedAt int64  `gorm:"column:applied_at;not null"`
}

func (schemaMigrationRow) TableName() string { return "schema_migrations" }

// Migrate applies every migration newer than the database's version, in
// order, and returns the versions it applied. Running it again is a no-op.
// On MySQL, concurrent starts serialize on a named lock (GET_LOCK) so two
// processes never run the same step at once. On MariaDB it then installs
// the save procedure when missing (saveproc.go); failing to is not an
// error of the migration, and SaveProcedure says why.
func (db *DB) Migrate(ctx context.Context) ([]int, error) {
	g := db.Gorm.WithContext(ctx)
	if db.Dialect == MySQL {
		// A named lock is held by the connection, so pin one.
		conn, err := g.DB()
		if err != nil {
			return nil, err
		}
		c, err := conn.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		defer c.Close()
		var got int
		if err := c.QueryRowContext(ctx, "SELECT GET_LOCK('nexo_migrate', 60)").Scan(&got); err != nil || got != 1 {
			return nil, fmt.Errorf("migrate: could not take the migration lock (got %d): %v", got, err)
		}
		defer c.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK('nexo_migrate')") //nolint:errcheck
	}
	if db.Dialect == MySQL {
		// IDs are case-sensitive ("Alice" and "alice" are two users, and
		// si_Alice_bob is not si_alice_bob), so every column compares
		// bytewise: utf8mb4_bin, as SQLite does. Session makes the configured
		// handle reusable: chained calls on a bare Set() result would share
		// (and pollute) one statement.
		g = g.Set("gorm:table_options", "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin").Session(&gorm.Session{})
	}
	if err := g.AutoMigrate(&schemaMigrationRow{}); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var done []int
	if err := g.Model(&schemaMigrationRow{}).Pluck("version", &done).Error; err != nil {
		return nil, fmt.Errorf("migrate: read versions: %w", err)
	}
	have := map[int]bool{}
	for _, v := range done {
		have[v] = true
	}
	var applied []int
	for _, m := range migrations {
		if have[m.Version] {
			continue
		}
		if err := m.Up(g, db.Dialect); err != nil {
			return applied, fmt.Errorf("migrate %d (%s): %w", m.Version, m.Name, err)
		}
		row := schemaMigrationRow{Version: m.Version, Name: m.Name, AppliedAt: nowMillis()}
		if err := g.Create(&row).Error; err != nil {
			return applied, fmt.Errorf("migrate %d: record: %w", m.Version, err)
		}
		applied = append(applied, m.Version)
	}
	if db.MariaDB() {
		if err := db.installSaveProcedure(ctx, g); err != nil {
			db.saveProc.Store(&procState{err: err})
		}
	}
	return applied, nil
}

// SchemaVersion returns the highest applied migration, 0 for an empty database.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v *int
	if !db.Gorm.Migrator().HasTable(&schemaMigrationRow{}) {
		return 0, nil
	}
	err := db.Gorm.WithContext(ctx).Model(&schemaMigrationRow{}).Select("MAX(version)").Scan(&v).Error
	if err != nil || v == nil {
		return 0, err
	}
	return *v, nil
}

// LatestSchemaVersion is the version this build migrates to.
func LatestSchemaVersion() int { return migrations[len(migrations)-1].Version }
