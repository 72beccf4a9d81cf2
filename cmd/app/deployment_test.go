package app

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestDeploymentCheck: a deployment on MySQL and Redis restarts on its
// database and key prefix; an instance with another database on that
// prefix, or with another prefix on that database, is refused at start
// with an error naming both databases or both prefixes. The embedded mode
// restarts on its SQLite file with a fresh in-process Redis.
func TestDeploymentCheck(t *testing.T) {
	t.Parallel()
	cfg := realConfig(t)
	_, _, stop := startApp(t, cfg)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	_, logs, stop := startApp(t, cfg) // the restart
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "msg=deployment") {
		t.Errorf("the start did not log the deployment:\n%s", logs)
	}
	schema := func(dsn string) string {
		c, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		return c.DBName
	}
	quiet := slog.New(slog.DiscardHandler)

	otherDB := cfg
	otherDB.MySQL.DSN = storetest.MySQLDSN(t)
	_, err := New(context.Background(), otherDB, quiet)
	if !errors.Is(err, store.ErrOtherDeployment) {
		t.Fatalf("another database on the prefix: %v", err)
	}
	for _, want := range []string{`"` + schema(cfg.MySQL.DSN) + `"`, `"` + schema(otherDB.MySQL.DSN) + `"`, `redis.key_prefix "` + cfg.Redis.KeyPrefix + `"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %s:\n%v", want, err)
		}
	}

	otherPrefix := cfg
	otherPrefix.Redis.KeyPrefix = cfg.Redis.KeyPrefix + "-b"
	t.Cleanup(func() {
		rdb, _ := storetest.Redis(t)
		storetest.DeletePrefix(rdb, otherPrefix.Redis.KeyPrefix)
	})
	_, err = New(context.Background(), otherPrefix, quiet)
	if !errors.Is(err, store.ErrOtherDeployment) {
		t.Fatalf("another prefix on the database: %v", err)
	}
	for _, want := range []string{`"` + cfg.Redis.KeyPrefix + `"`, `"` + otherPrefix.Redis.KeyPrefix + `"`, `"` + schema(cfg.MySQL.DSN) + `"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %s:\n%v", want, err)
		}
	}

	embedded := embeddedConfig(t)
	for range 2 {
		_, _, stop := startApp(t, embedded)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
}
