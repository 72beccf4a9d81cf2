package store_test

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/nexo-im/nexo/store/storetest"
)

// TestMySQLSessionsAreReadCommitted: every pooled session runs READ
// COMMITTED (store/isolation.go: REPEATABLE READ's gap locks deadlocked
// concurrent save batches), and a DSN that sets the level keeps it.
func TestMySQLSessionsAreReadCommitted(t *testing.T) {
	db := storetest.MySQL(t)
	ctx := context.Background()
	var bin struct {
		LogBin int
		Format string
	}
	db.Gorm.WithContext(ctx).Raw("SELECT @@log_bin AS log_bin, @@binlog_format AS format").Scan(&bin)
	if bin.LogBin == 1 && bin.Format == "STATEMENT" {
		t.Skipf("this server logs statements, so sessions stay REPEATABLE READ (%s; %+v)", db.Isolation, bin)
	}
	if db.Isolation != "READ-COMMITTED" {
		t.Errorf("OpenMySQL reports %q", db.Isolation)
	}
	level := func(g *gorm.DB) string {
		var v string
		if g.WithContext(ctx).Raw("SELECT @@tx_isolation").Scan(&v).Error != nil {
			g.WithContext(ctx).Raw("SELECT @@transaction_isolation").Scan(&v)
		}
		return v
	}
	// Two sessions at once: both are set, not just the first.
	err := db.Gorm.Transaction(func(tx *gorm.DB) error {
		if got := level(tx); got != "READ-COMMITTED" {
			t.Errorf("a transaction runs %q", got)
		}
		if got := level(db.Gorm); got != "READ-COMMITTED" {
			t.Errorf("another session runs %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
