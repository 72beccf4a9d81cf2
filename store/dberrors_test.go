package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/store"
)

// TestCountDBErrors: a failing statement counts; a missing row does not.
func TestCountDBErrors(t *testing.T) {
	db, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := prometheus.NewRegistry()
	if err := store.CountDBErrors(db, reg); err != nil {
		t.Fatal(err)
	}
	_ = db.Gorm.Exec("SELECT * FROM no_such_table").Error
	var n int
	_ = db.Gorm.Raw("SELECT 1 WHERE 1 = 0").Row().Scan(&n) // no row: not a failure
	if got, err := testutil.GatherAndCount(reg, "nexo_db_errors_total"); err != nil || got == 0 {
		t.Fatalf("series: %d, %v", got, err)
	}
	var total float64
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	if total != 1 {
		t.Fatalf("nexo_db_errors_total = %v, want 1", total)
	}
}
