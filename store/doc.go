// Package store keeps Nexo's durable state: GORM models and repositories on
// MySQL/MariaDB (or SQLite for the embedded default), versioned migrations,
// and the mapping of driver errors (1062 duplicate key, record not found) to
// domain errors. GORM rows never leave this package: repositories take and
// return domain types. Dialect differences (upsert clauses, GREATEST vs MAX)
// stay here too.
package store
