package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

// TestBindDeployment: the first start binds a database and a key prefix to
// each other (concurrent first starts agree) and restarts pass; another
// database on the prefix is refused naming both databases and the prefix,
// and so is another prefix on the database; CheckDeployment reports each
// case without writing.
func TestBindDeployment(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rdb, prefix := storetest.Redis(t)
			keys := store.Keys{Prefix: prefix}
			db, other := b.Open(t), b.Open(t)

			msg, err := store.CheckDeployment(ctx, db, rdb, keys)
			if err != nil || !strings.Contains(msg, "not recorded yet") {
				t.Fatalf("check before the first start: %q, %v", msg, err)
			}
			var wg sync.WaitGroup
			ids := make([]store.DatabaseID, 4)
			errs := make([]error, 4)
			for i := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ids[i], errs[i] = store.BindDeployment(ctx, db, rdb, keys)
				}()
			}
			wg.Wait()
			for i := range ids {
				if errs[i] != nil || ids[i].UUID == "" || ids[i] != ids[0] {
					t.Fatalf("first start %d: %+v, %v (first: %+v)", i, ids[i], errs[i], ids[0])
				}
			}
			again, err := store.BindDeployment(ctx, db, rdb, keys)
			if err != nil || again != ids[0] {
				t.Fatalf("restart: %+v, %v; want %+v", again, err, ids[0])
			}
			if msg, err := store.CheckDeployment(ctx, db, rdb, keys); err != nil || !strings.Contains(msg, "belong to each other") {
				t.Fatalf("check after the first start: %q, %v", msg, err)
			}

			// Another database on the same prefix.
			_, err = store.BindDeployment(ctx, other, rdb, keys)
			if !errors.Is(err, store.ErrOtherDeployment) {
				t.Fatalf("other database on the prefix: %v", err)
			}
			otherID, _ := store.BindDeployment(ctx, other, rdb, store.Keys{Prefix: prefix + "-other"})
			for _, want := range []string{ids[0].String(), otherID.String(), `"` + prefix + `"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal lacks %s:\n%v", want, err)
				}
			}
			if _, err := store.CheckDeployment(ctx, other, rdb, keys); !errors.Is(err, store.ErrOtherDeployment) {
				t.Errorf("check of the other database on the prefix: %v", err)
			}

			// Another prefix on the same database.
			elsewhere := store.Keys{Prefix: prefix + "-b"}
			t.Cleanup(func() { storetest.DeletePrefix(rdb, elsewhere.Prefix) })
			_, err = store.BindDeployment(ctx, db, rdb, elsewhere)
			if !errors.Is(err, store.ErrOtherDeployment) {
				t.Fatalf("other prefix on the database: %v", err)
			}
			for _, want := range []string{ids[0].String(), `"` + prefix + `"`, `"` + elsewhere.Prefix + `"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal lacks %s:\n%v", want, err)
				}
			}
			if n, _ := rdb.Exists(ctx, elsewhere.Deployment()).Result(); n != 0 {
				t.Errorf("the refused prefix was recorded: it belongs to no database")
			}
			if _, err := store.CheckDeployment(ctx, db, rdb, elsewhere); !errors.Is(err, store.ErrOtherDeployment) {
				t.Errorf("check of the other prefix: %v", err)
			}
			// The refusals changed nothing: the deployment still starts.
			if _, err := store.BindDeployment(ctx, db, rdb, keys); err != nil {
				t.Fatalf("restart after the refusals: %v", err)
			}
		})
	}
}
