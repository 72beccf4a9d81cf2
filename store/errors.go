package store

import (
	"errors"
	"strings"

	mysqldrv "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/nexo-im/nexo/domain"
)

// MySQL error numbers the store reacts to.
const (
	errDupEntry     = 1062
	errLockDeadlock = 1213
	errLockWait     = 1205
)

// mapErr turns driver errors into domain errors: a unique-key violation
// becomes domain.ErrDuplicate and a missing row notFound (so each repository
// names its own: ErrUserNotFound, ErrGroupNotFound, ...). Anything else is
// returned as is.
func mapErr(err error, notFound error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gorm.ErrRecordNotFound):
		return notFound
	case isDuplicate(err):
		return errors.Join(domain.ErrDuplicate, err)
	}
	return err
}

func isDuplicate(err error) bool {
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		return me.Number == errDupEntry
	}
	// modernc.org/sqlite reports "constraint failed: UNIQUE constraint failed: ..."
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// IsRetryable reports whether err is worth retrying as is: a deadlock or
// lock-wait timeout, SQLITE_BUSY, or a connection-level failure. Data errors
// (too long, bad value) are not: retrying them cannot succeed.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		return me.Number == errLockDeadlock || me.Number == errLockWait ||
			me.Number == 1040 /* too many connections */ || me.Number == 1053 /* shutdown in progress */ ||
			me.Number == 2006 || me.Number == 2013 || me.Number == 1927 /* connection killed */
	}
	msg := err.Error()
	for _, s := range []string{"database is locked", "SQLITE_BUSY", "connection refused", "bad connection",
		"broken pipe", "connection reset", "i/o timeout", "invalid connection", "driver: bad connection",
		"context deadline exceeded", "EOF", "no such host", "server has gone away", "sql: database is closed"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
