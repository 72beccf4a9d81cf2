package store_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestCountDBErrors: a failing statement counts; a missing row does not.
func TestCountDBErrors(t *testing.T) {
	db, reg := sqliteCountingErrors(t)
	_ = db.Gorm.Exec("SELECT * FROM no_such_table").Error
	var n int
	_ = db.Gorm.Raw("SELECT 1 WHERE 1 = 0").Row().Scan(&n) // no row: not a failure
	if got, err := testutil.GatherAndCount(reg, "nexo_db_errors_total"); err != nil || got == 0 {
		t.Fatalf("series: %d, %v", got, err)
	}
	if total := totalErrors(t, reg); total != 1 {
		t.Fatalf("nexo_db_errors_total = %v, want 1", total)
	}
}

// TestCountDBErrorsOfTheOneTripSave: a save batch that fails on MariaDB's
// one-round-trip path (outside GORM's callbacks) still counts.
func TestCountDBErrorsOfTheOneTripSave(t *testing.T) {
	db := storetest.MySQL(t)
	reg := prometheus.NewRegistry()
	if err := store.CountDBErrors(db, reg); err != nil {
		t.Fatal(err)
	}
	m := textMsg("alice", "bob", "e1", 1)
	m.AtUserIDs = []string{strings.Repeat("u", 100)} // longer than message_mentions.user_id
	if _, err := store.NewMessageRepo(db).SaveBatch(context.Background(), []domain.Message{m}); err == nil {
		t.Fatal("saved a mention longer than its column")
	}
	if total := totalErrors(t, reg); total != 1 {
		t.Fatalf("nexo_db_errors_total = %v, want 1", total)
	}
}

// TestDuplicateLookupCountsItsStatementAndFailure: the accept-time lookup
// runs outside GORM, so it reports its statement to the OpCounter and its
// failure to nexo_db_errors_total{op="query"} itself.
func TestDuplicateLookupCountsItsStatementAndFailure(t *testing.T) {
	db, reg := sqliteCountingErrors(t)
	var ops store.OpCounter
	ctx := store.WithOpCounter(context.Background(), &ops)
	keys := []domain.ClientMsgKey{{SenderID: "alice", ClientMsgID: "c1"}}
	if _, err := store.NewMessageRepo(db).ByClientMsgIDs(ctx, keys); err == nil {
		t.Fatal("looked up messages in a database without a messages table")
	}
	if ops.DB.Load() != 1 || ops.DBTrips.Load() != 1 {
		t.Errorf("counted %d statements in %d trips, want 1 in 1", ops.DB.Load(), ops.DBTrips.Load())
	}
	if got := errorsOf(t, reg, "query"); got != 1 {
		t.Errorf(`nexo_db_errors_total{op="query"} = %v, want 1`, got)
	}
}

// sqliteCountingErrors opens an SQLite database with no tables whose
// failed statements count in the returned registry's nexo_db_errors_total.
func sqliteCountingErrors(t *testing.T) (*store.DB, *prometheus.Registry) {
	t.Helper()
	db, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	reg := prometheus.NewRegistry()
	if err := store.CountDBErrors(db, reg); err != nil {
		t.Fatal(err)
	}
	return db, reg
}

// totalErrors sums nexo_db_errors_total over its series.
func totalErrors(t *testing.T, reg *prometheus.Registry) float64 {
	return counterTotal(t, reg, "nexo_db_errors_total")
}

// counterTotal sums the counter name over its series in reg.
func counterTotal(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// errorsOf returns nexo_db_errors_total's value for op.
func errorsOf(t *testing.T, reg *prometheus.Registry, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" && l.GetValue() == op {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestOpenMySQLKnowsMariaDB: the server's flavour is read at open, so on
// MariaDB (CI's) every SaveBatch test runs the compound-statement save.
func TestOpenMySQLKnowsMariaDB(t *testing.T) {
	db := storetest.MySQL(t)
	var version string
	if err := db.Gorm.Raw("SELECT VERSION()").Scan(&version).Error; err != nil {
		t.Fatal(err)
	}
	if want := strings.Contains(strings.ToLower(version), "mariadb"); db.MariaDB() != want {
		t.Fatalf("server %q: MariaDB() = %v, want %v", version, db.MariaDB(), want)
	}
}
