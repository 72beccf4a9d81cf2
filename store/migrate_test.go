package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func TestMigrateIsIdempotentAndComplete(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t) // migrated once
			ctx := context.Background()
			applied, err := db.Migrate(ctx)
			if err != nil || len(applied) != 0 {
				t.Fatalf("second migrate applied %v, err %v", applied, err)
			}
			v, err := db.SchemaVersion(ctx)
			if err != nil || v != store.LatestSchemaVersion() {
				t.Fatalf("version %d (want %d), err %v", v, store.LatestSchemaVersion(), err)
			}
			m := db.Gorm.Migrator()
			for table, indexes := range map[string][]string{
				"users":             {"idx_created_at", "uk_users_id_norm"},
				"groups":            {"idx_creator", "idx_status"},
				"group_members":     {"uk_group_user", "idx_group_status", "idx_user_id"},
				"conversations":     {"uk_owner_conv", "idx_owner", "idx_conv_type"},
				"seq_conversations": nil,
				"seq_users":         {"uk_user_conv", "idx_user"},
				"messages":          {"uk_conv_seq", "uk_sender_client_msg", "uk_server_msg_id", "idx_sender", "idx_send_at"},
				"object_refs":       {"idx_object_refs_conv", "idx_object_refs_msg"},
			} {
				if !m.HasTable(table) {
					t.Errorf("table %s missing", table)
				}
				for _, idx := range indexes {
					if !m.HasIndex(table, idx) {
						t.Errorf("index %s.%s missing", table, idx)
					}
				}
			}
			for table, cols := range map[string][]string{
				"users":             {"password_hash", "group_invites", "dm_policy"},
				"user_blocks":       {"blocker_id", "blocked_id", "created_at"},
				"groups":            {"muted"},
				"group_members":     {"mute_until"},
				"deployment":        {"uuid", "key_prefix"},
				"messages":          {"server_msg_id", "status", "at_user_ids"},
				"seq_users":         {"delivered_seq", "read_seq", "min_seq", "max_seq"},
				"seq_conversations": {"reserved_seq", "max_seq"},
			} {
				for _, c := range cols {
					if !m.HasColumn(table, c) {
						t.Errorf("column %s.%s missing", table, c)
					}
				}
			}
		})
	}
}

func TestMySQLTablesAreUTF8MB4(t *testing.T) {
	db := storetest.MySQL(t)
	var rows []struct {
		TableName      string `gorm:"column:TABLE_NAME"`
		TableCollation string `gorm:"column:TABLE_COLLATION"`
	}
	if err := db.Gorm.Raw("SELECT TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) < 8 {
		t.Fatalf("only %d tables", len(rows))
	}
	for _, r := range rows {
		if len(r.TableCollation) < 7 || r.TableCollation[:7] != "utf8mb4" {
			t.Errorf("%s has collation %s", r.TableName, r.TableCollation)
		}
	}
}

// TestMigrateUserIDNorm: migration 5 on a database that predates it, with
// accounts that clash without letter case: every account keeps working,
// the oldest of a clash gets id_norm, and no new case variant registers.
func TestMigrateUserIDNorm(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			ctx := context.Background()
			g := db.Gorm.WithContext(ctx)
			// Back to version 4: no index, no id_norm values.
			if err := g.Migrator().DropIndex("users", "uk_users_id_norm"); err != nil {
				t.Fatal(err)
			}
			if err := g.Exec("DELETE FROM schema_migrations WHERE version = 5").Error; err != nil {
				t.Fatal(err)
			}
			for i, id := range []string{"dana", "Dana", "DANA", "eve"} {
				if err := g.Exec("INSERT INTO users (id, nickname, avatar, password_hash, created_at, updated_at) VALUES (?, ?, '', 'h', ?, ?)",
					id, id, 100+i, 100+i).Error; err != nil {
					t.Fatal(err)
				}
			}
			applied, err := db.Migrate(ctx)
			if err != nil || len(applied) != 1 || applied[0] != 5 {
				t.Fatalf("applied %v, err %v", applied, err)
			}
			norms := map[string]*string{}
			var rows []struct {
				ID     string
				IDNorm *string
			}
			if err := g.Table("users").Select("id, id_norm").Find(&rows).Error; err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				norms[r.ID] = r.IDNorm
			}
			if norms["dana"] == nil || *norms["dana"] != "dana" || norms["Dana"] != nil || norms["DANA"] != nil || norms["eve"] == nil {
				t.Fatalf("id_norm after migration: %v", rows)
			}
			repo := store.NewUserRepo(db)
			for _, id := range []string{"dana", "Dana", "DANA", "eve"} {
				if _, err := repo.Get(ctx, id); err != nil {
					t.Fatalf("%s no longer found: %v", id, err)
				}
			}
			for _, id := range []string{"dAna", "EVE"} {
				if _, err := repo.Create(ctx, domain.User{ID: id, Nickname: id, PasswordHash: "h"}); !errors.Is(err, domain.ErrUserExists) {
					t.Fatalf("create %s: %v, want ErrUserExists", id, err)
				}
			}
			if applied, err := db.Migrate(ctx); err != nil || len(applied) != 0 {
				t.Fatalf("migrate again: %v %v", applied, err)
			}
		})
	}
}

// TestMigrateGroupInvitesAndDeployment: migrations 7 and 8 on a database
// that predates them: every existing user gets group_invites everyone, and
// the deployment table appears, empty until the first start binds it.
func TestMigrateGroupInvitesAndDeployment(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			db := b.Open(t)
			ctx := context.Background()
			g := db.Gorm.WithContext(ctx)
			// Back to version 6.
			if err := g.Migrator().DropColumn("users", "group_invites"); err != nil {
				t.Fatal(err)
			}
			if err := g.Migrator().DropTable("deployment"); err != nil {
				t.Fatal(err)
			}
			if err := g.Exec("DELETE FROM schema_migrations WHERE version IN (7, 8)").Error; err != nil {
				t.Fatal(err)
			}
			if err := g.Exec("INSERT INTO users (id, id_norm, nickname, avatar, password_hash, created_at, updated_at) VALUES ('old', 'old', 'Old', '', 'h', 1, 1)").Error; err != nil {
				t.Fatal(err)
			}
			applied, err := db.Migrate(ctx)
			if err != nil || len(applied) != 2 || applied[0] != 7 || applied[1] != 8 {
				t.Fatalf("applied %v, err %v", applied, err)
			}
			u, err := store.NewUserRepo(db).Get(ctx, "old")
			if err != nil || u.GroupInvites != domain.InvitesEveryone {
				t.Fatalf("existing user after migration 7: %+v, %v", u, err)
			}
			if !g.Migrator().HasTable("deployment") {
				t.Fatal("no deployment table after migration 8")
			}
			if applied, err := db.Migrate(ctx); err != nil || len(applied) != 0 {
				t.Fatalf("migrate again: %v %v", applied, err)
			}
		})
	}
}
