package store

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
)

// OpCounter counts the Redis round trips and SQL statements made with a
// context that carries it (WithOpCounter), so a pipeline stage can report
// what one message costs it (workers: nexo_stage_redis_calls_total,
// nexo_stage_db_statements_total). A pipeline of many commands is one
// round trip. DB counts SQL statements (INSERT, SELECT, upserts) and
// DBTrips the database round trips that carried them: one per statement
// through GORM, one for SaveBatch's multi-statement query; each
// transaction adds BEGIN (START TRANSACTION) and COMMIT, which neither
// counts (SaveBatch sends its START TRANSACTION with its statements).
type OpCounter struct {
	Redis   atomic.Int64
	DB      atomic.Int64
	DBTrips atomic.Int64
}

type opCounterKey struct{}

// WithOpCounter returns ctx carrying c.
func WithOpCounter(ctx context.Context, c *OpCounter) context.Context {
	return context.WithValue(ctx, opCounterKey{}, c)
}

func opCounterOf(ctx context.Context) *OpCounter {
	if ctx == nil {
		return nil
	}
	c, _ := ctx.Value(opCounterKey{}).(*OpCounter)
	return c
}

// CountRedisOps makes rdb count its round trips into the OpCounter of each
// call's context (calls without one are not counted).
func CountRedisOps(rdb redis.UniversalClient) { rdb.AddHook(redisOpHook{}) }

type redisOpHook struct{}

func (redisOpHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (redisOpHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c := opCounterOf(ctx); c != nil {
			c.Redis.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (redisOpHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if c := opCounterOf(ctx); c != nil {
			c.Redis.Add(1)
		}
		return next(ctx, cmds)
	}
}

// countStatements registers GORM callbacks that count every statement
// into the OpCounter of its context.
func countStatements(g *gorm.DB) error {
	count := func(tx *gorm.DB) {
		if c := opCounterOf(tx.Statement.Context); c != nil {
			c.DB.Add(1)
			c.DBTrips.Add(1)
		}
	}
	cb := g.Callback()
	for _, err := range []error{
		cb.Create().Before("gorm:create").Register("nexo:count_ops", count),
		cb.Query().Before("gorm:query").Register("nexo:count_ops", count),
		cb.Update().Before("gorm:update").Register("nexo:count_ops", count),
		cb.Delete().Before("gorm:delete").Register("nexo:count_ops", count),
		cb.Row().Before("gorm:row").Register("nexo:count_ops", count),
		cb.Raw().Before("gorm:raw").Register("nexo:count_ops", count),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}
