package store

import (
	"errors"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"
)

// dbErrorsCallback is the name of the callbacks CountDBErrors registers.
const dbErrorsCallback = "nexo:count_errors"

// CountDBErrors counts failed SQL statements of db in
// nexo_db_errors_total{dialect,op} (op: create, query, update, delete, raw,
// row; SaveBatch's one-round-trip query counts as raw), registered on
// reg. Expected outcomes are not failures: a missing row
// (gorm.ErrRecordNotFound) and a duplicate key (the unique keys are how
// Nexo deduplicates) are left out, so the counter means "the database is
// unwell" (connection lost, deadlock, timeout, full disk).
func CountDBErrors(db *DB, reg prometheus.Registerer) error {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "nexo", Name: "db_errors_total",
		Help: "Failed SQL statements by operation (missing rows and duplicate keys not counted).",
	}, []string{"dialect", "op"})
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	db.failures = func(op string) { c.WithLabelValues(string(db.Dialect), op).Inc() }
	cb := db.Gorm.Callback()
	for op, register := range map[string]func(name string, fn func(*gorm.DB)) error{
		"create": cb.Create().After("*").Register,
		"query":  cb.Query().After("*").Register,
		"update": cb.Update().After("*").Register,
		"delete": cb.Delete().After("*").Register,
		"raw":    cb.Raw().After("*").Register,
		"row":    cb.Row().After("*").Register,
	} {
		counter := c.WithLabelValues(string(db.Dialect), op)
		if err := register(dbErrorsCallback, func(tx *gorm.DB) {
			if failed(tx.Error) {
				counter.Inc()
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// noteFailure counts err in nexo_db_errors_total under op when it is a
// failure (see failed); statements run around GORM report themselves here.
func (d *DB) noteFailure(op string, err error) {
	if d.failures != nil && failed(err) {
		d.failures(op)
	}
}

// failed reports whether err is a database failure rather than an expected
// outcome (no row, duplicate key).
func failed(err error) bool {
	if err == nil || errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, gorm.ErrDuplicatedKey) {
		return false
	}
	msg := err.Error()
	return !strings.Contains(msg, "Duplicate entry") && !strings.Contains(msg, "UNIQUE constraint failed")
}
