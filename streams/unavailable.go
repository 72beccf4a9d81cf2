package streams

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrRedisUnavailable wraps every accept failure caused by Redis not
// answering (connection refused, timeout, closed pool), as opposed to Redis
// answering with an error. The send service falls back to the synchronous
// path on it when two_phase.fail_open is set.
var ErrRedisUnavailable = errors.New("redis unavailable")

// classify wraps transport failures in ErrRedisUnavailable.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !errors.Is(err, redis.ErrClosed) {
		if failoverAnswer(err) {
			return fmt.Errorf("%s: %w: %w", op, ErrRedisUnavailable, err)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	var nerr net.Error
	if errors.As(err, &nerr) || errors.Is(err, redis.ErrClosed) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, net.ErrClosed) || isConnError(err) {
		return fmt.Errorf("%s: %w: %w", op, ErrRedisUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// failoverAnswer reports Redis answers that mean "no master can take this
// now" — a cluster slot without a master, a replica still loading or not
// yet promoted, a slot mid-migration — which pass once the failover or the
// reshard is done, so they count as Redis being unavailable.
func failoverAnswer(err error) bool {
	msg := err.Error()
	for _, p := range []string{"CLUSTERDOWN", "LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN", "NOREPLICAS"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func isConnError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || err.Error() == "EOF"
}
