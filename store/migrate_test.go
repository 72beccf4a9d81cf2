package store_test

import (
	"context"
	"testing"

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
				"users":             {"idx_created_at"},
				"groups":            {"idx_creator", "idx_status"},
				"group_members":     {"uk_group_user", "idx_group_status", "idx_user_id"},
				"conversations":     {"uk_owner_conv", "idx_owner", "idx_conv_type"},
				"seq_conversations": nil,
				"seq_users":         {"uk_user_conv", "idx_user"},
				"messages":          {"uk_conv_seq", "uk_sender_client_msg", "uk_server_msg_id", "idx_sender", "idx_send_at"},
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
				"users":             {"password_hash"},
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
