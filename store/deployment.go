package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// One database, one key prefix (docs/operations.md). A deployment is a
// database and a Redis key prefix used together; an instance that joins a
// prefix with another database takes stream shards and saves their
// messages into its own database, and one that uses the database under
// another prefix allocates seqs and caches members apart from the others.
// So each side records the other at the first start:
//
//	database: table deployment, one row {uuid (made then), key_prefix}
//	Redis:    {prefix}:deployment  JSON {database_uuid, schema, host}
//
// and a start where they disagree is refused, naming both databases.

// ErrOtherDeployment: the database and redis.key_prefix belong to
// different deployments.
var ErrOtherDeployment = errors.New("the database and redis.key_prefix belong to different deployments")

// deploymentRow is the database's side: its identity, made at the first
// start, and the key prefix it belongs to ("" until an instance binds it).
type deploymentRow struct {
	ID        int    `gorm:"column:id;primaryKey;autoIncrement:false"`
	UUID      string `gorm:"column:uuid;type:varchar(36);not null"`
	KeyPrefix string `gorm:"column:key_prefix;type:varchar(255);not null;default:''"`
	CreatedAt int64  `gorm:"column:created_at;not null"`
	BoundAt   int64  `gorm:"column:bound_at;not null;default:0"`
}

func (deploymentRow) TableName() string { return "deployment" }

// DatabaseID is a database as a deployment knows it.
type DatabaseID struct {
	// UUID is made at the database's first start and kept in it: a copy of
	// the database carries it too, so Schema is compared as well.
	UUID string `json:"database_uuid"`
	// Schema is the MySQL schema (DATABASE()) or the SQLite file.
	Schema string `json:"schema"`
	// Host is where the server says it runs (@@hostname:@@port; "" on
	// SQLite): shown, not compared, since a failover moves it.
	Host string `json:"host"`
}

// String names the database for an operator.
func (d DatabaseID) String() string {
	s := strconv.Quote(d.Schema)
	if d.Host != "" {
		s += " on " + d.Host
	}
	return s + " (deployment id " + d.UUID + ")"
}

func (d DatabaseID) same(o DatabaseID) bool { return d.UUID == o.UUID && d.Schema == o.Schema }

// Deployment is the key holding the database that keys' prefix belongs to.
func (k Keys) Deployment() string { return k.Key("deployment") }

// BindDeployment checks that db and keys.Prefix belong to each other and
// records it on each side where it is not recorded yet (the first start:
// the database's UUID is made then). It returns the database's identity,
// or an error wrapping ErrOtherDeployment that names both databases and
// the prefix. Concurrent first starts agree: each side is written only
// where empty, and read back.
func BindDeployment(ctx context.Context, db *DB, rdb redis.UniversalClient, keys Keys) (DatabaseID, error) {
	id, boundTo, err := db.identity(ctx, true)
	if err != nil {
		return id, err
	}
	rec, found, err := readPrefixRecord(ctx, rdb, keys)
	if err != nil {
		return id, err
	}
	if err := disagreement(id, boundTo, rec, found, keys); err != nil {
		return id, err
	}
	recorded := false
	if !found {
		b, _ := json.Marshal(id)
		ok, err := rdb.SetNX(ctx, keys.Deployment(), b, 0).Result()
		if err != nil {
			return id, fmt.Errorf("record the deployment under redis.key_prefix %q: %w", keys.Prefix, err)
		}
		if !ok { // another first start won: it must be of this database
			if rec, found, err = readPrefixRecord(ctx, rdb, keys); err != nil {
				return id, err
			}
			if err := disagreement(id, boundTo, rec, found, keys); err != nil {
				return id, err
			}
		}
		recorded = ok
	} else if rec.Host != id.Host {
		b, _ := json.Marshal(id) // the database moved (failover): show where it is now
		if err := rdb.Set(ctx, keys.Deployment(), b, 0).Err(); err != nil {
			return id, fmt.Errorf("record the deployment under redis.key_prefix %q: %w", keys.Prefix, err)
		}
	}
	if boundTo == "" {
		g := db.Gorm.WithContext(ctx).Model(&deploymentRow{}).Where("id = 1 AND key_prefix = ''").
			Updates(map[string]any{"key_prefix": keys.Prefix, "bound_at": nowMillis()})
		if g.Error != nil {
			return id, fmt.Errorf("record redis.key_prefix in the database: %w", g.Error)
		}
		if _, boundTo, err = db.identity(ctx, false); err != nil {
			return id, err
		}
		if err := disagreement(id, boundTo, DatabaseID{}, false, keys); err != nil {
			if recorded { // another prefix took the database meanwhile: leave this prefix free
				_ = rdb.Del(context.WithoutCancel(ctx), keys.Deployment()).Err()
			}
			return id, err
		}
	}
	return id, nil
}

// CheckDeployment reports, without writing anything, whether db and
// keys.Prefix belong to each other (for nexo config check): a sentence
// saying so, or an error wrapping ErrOtherDeployment.
func CheckDeployment(ctx context.Context, db *DB, rdb redis.UniversalClient, keys Keys) (string, error) {
	id, boundTo, err := db.identity(ctx, false)
	if err != nil {
		return "", err
	}
	rec, found, err := readPrefixRecord(ctx, rdb, keys)
	if err != nil {
		return "", err
	}
	if id.UUID == "" {
		if found {
			return "", fmt.Errorf("%w: redis.key_prefix %q belongs to database %s, but database %q has never started Nexo",
				ErrOtherDeployment, keys.Prefix, rec, id.Schema)
		}
		return fmt.Sprintf("database %q and redis.key_prefix %q are not recorded yet: the first start binds them", id.Schema, keys.Prefix), nil
	}
	if err := disagreement(id, boundTo, rec, found, keys); err != nil {
		return "", err
	}
	if !found || boundTo == "" {
		return fmt.Sprintf("database %s and redis.key_prefix %q agree; the next start records the side not recorded yet", id, keys.Prefix), nil
	}
	return fmt.Sprintf("database %s and redis.key_prefix %q belong to each other", id, keys.Prefix), nil
}

// disagreement is nil when the prefix's record (if found) names id and the
// database's prefix (if bound) is keys.Prefix; else ErrOtherDeployment,
// naming both sides.
func disagreement(id DatabaseID, boundTo string, rec DatabaseID, found bool, keys Keys) error {
	if found && !rec.same(id) {
		return fmt.Errorf("%w: redis.key_prefix %q belongs to database %s, but this instance uses database %s. "+
			"Instances of two deployments on one prefix take each other's stream shards and save each other's messages into the wrong database. "+
			"Give this deployment a redis.key_prefix of its own, or point it at the database of that prefix (docs/operations.md, \"One database, one key prefix\")",
			ErrOtherDeployment, keys.Prefix, rec, id)
	}
	if boundTo != "" && boundTo != keys.Prefix {
		return fmt.Errorf("%w: database %s belongs to redis.key_prefix %q, but this instance uses redis.key_prefix %q. "+
			"Two deployments on one database allocate seqs and cache group members apart and miss each other's changes. "+
			"Set redis.key_prefix %q, or give this deployment a database of its own (docs/operations.md, \"One database, one key prefix\")",
			ErrOtherDeployment, id, boundTo, keys.Prefix, boundTo)
	}
	return nil
}

// identity reads the database's identity and the prefix it is bound to
// (""), making its UUID when create is set and there is none yet. Without
// create, a database that never started (no row, or no table before the
// migrations) has UUID "".
func (db *DB) identity(ctx context.Context, create bool) (DatabaseID, string, error) {
	g := db.Gorm.WithContext(ctx)
	var id DatabaseID
	if db.Dialect == MySQL {
		var host string
		var port int
		if err := g.Raw("SELECT DATABASE(), @@hostname, @@port").Row().Scan(&id.Schema, &host, &port); err != nil {
			return id, "", fmt.Errorf("read the database's name: %w", err)
		}
		id.Host = host + ":" + strconv.Itoa(port)
	} else {
		var seq int
		var name string
		if err := g.Raw("PRAGMA database_list").Row().Scan(&seq, &name, &id.Schema); err != nil {
			return id, "", fmt.Errorf("read the database's file: %w", err)
		}
	}
	if !create && !g.Migrator().HasTable(&deploymentRow{}) {
		return id, "", nil
	}
	var row deploymentRow
	err := g.Take(&row, 1).Error
	if errors.Is(err, gorm.ErrRecordNotFound) && create {
		fresh := deploymentRow{ID: 1, UUID: uuid.NewString(), CreatedAt: nowMillis()}
		if err := g.Clauses(clause.OnConflict{DoNothing: true}).Create(&fresh).Error; err != nil {
			return id, "", fmt.Errorf("record the database's identity: %w", err)
		}
		err = g.Take(&row, 1).Error
	}
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return id, "", nil
	case err != nil:
		return id, "", fmt.Errorf("read the database's identity: %w", err)
	}
	id.UUID = row.UUID
	return id, row.KeyPrefix, nil
}

// readPrefixRecord reads the database the prefix belongs to; found is
// false when none is recorded.
func readPrefixRecord(ctx context.Context, rdb redis.UniversalClient, keys Keys) (DatabaseID, bool, error) {
	var rec DatabaseID
	b, err := rdb.Get(ctx, keys.Deployment()).Bytes()
	if errors.Is(err, redis.Nil) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("read the deployment of redis.key_prefix %q: %w", keys.Prefix, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.UUID == "" {
		return rec, false, fmt.Errorf("the deployment record %s is not Nexo's (%q): %v", keys.Deployment(), b, err)
	}
	return rec, true, nil
}
