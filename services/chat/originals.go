package chat

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/nexo-im/nexo/domain"
)

// Originals finds already saved messages by sender and client_msg_id
// (store.MessageRepo, one query on uk_sender_client_msg); a key with no
// saved message is absent from the map.
type Originals interface {
	ByClientMsgIDs(ctx context.Context, keys []domain.ClientMsgKey) (map[domain.ClientMsgKey]domain.Message, error)
}

// maxLookupBatch bounds one duplicate lookup's IN list.
const maxLookupBatch = 256

// lookupTimeout bounds one batched lookup: the batch runs without its
// callers' cancellation, and a database that hangs must not hold every
// send (a failed lookup lets the send go on; see savedOriginal).
const lookupTimeout = 2 * time.Second

// originalLookup is the accept-time duplicate check of every send, group
// committed: the lookups of concurrent sends go to the database as one
// query (domain.GroupCommit), so under load the check costs one round trip
// per batch instead of one per message, and at low load a lookup goes at
// once, alone.
type originalLookup struct {
	gc *domain.GroupCommit[domain.ClientMsgKey, domain.Message]
}

func newOriginalLookup(o Originals) *originalLookup {
	if o == nil {
		return nil
	}
	return &originalLookup{gc: domain.NewGroupCommit(maxLookupBatch,
		func(ctx context.Context, batch []*domain.Call[domain.ClientMsgKey, domain.Message]) {
			keys := make([]domain.ClientMsgKey, len(batch))
			for i, c := range batch {
				keys[i] = c.Req
			}
			ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
			defer cancel()
			found, err := o.ByClientMsgIDs(ctx, keys)
			for _, c := range batch {
				switch m, ok := found[c.Req]; {
				case err != nil:
					c.Err = err
				case ok:
					c.Res = m
				default:
					c.Err = domain.ErrMessageNotFound
				}
			}
		})}
}

// errLookupTooSlow: the database did not answer within the send's wait.
var errLookupTooSlow = errors.New("the database did not answer the duplicate check in time")

// find returns the saved message with key's sender and client_msg_id;
// domain.ErrMessageNotFound when there is none, or the database's error.
// With wait > 0 it returns errLookupTooSlow once wait has passed without
// an answer (the lookup finishes on its own, shared with the sends of its
// batch).
func (l *originalLookup) find(ctx context.Context, key domain.ClientMsgKey, wait time.Duration) (domain.Message, error) {
	if wait <= 0 {
		return l.gc.Do(ctx, key)
	}
	type answer struct {
		m   domain.Message
		err error
	}
	done := make(chan answer, 1)
	go func() {
		m, err := l.gc.Do(context.WithoutCancel(ctx), key)
		done <- answer{m, err}
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case a := <-done:
		return a.m, a.err
	case <-t.C:
		return domain.Message{}, errLookupTooSlow
	case <-ctx.Done():
		return domain.Message{}, ctx.Err()
	}
}

// IdemRecords says which idempotency records Redis certainly still holds
// (streams.Accepter): those written since since, each for ttl.
type IdemRecords interface {
	RecordsKept() (since time.Time, ttl time.Duration)
}

// idClockSkew is how far a client's clock may run from the server's for
// the time in its client_msg_id to be trusted.
const idClockSkew = time.Minute

// recentClientMsgID reports whether an earlier send of id, if there was
// one, is certainly still remembered by its Redis idempotency record, so
// that the accept step alone answers a retry of it and the database need
// not be asked. That holds when id is a UUIDv7 (RFC 9562: its first 48
// bits are the client's Unix ms when it made the ID, which is when it
// first sent it) whose time is after since (when the records were last
// known whole; what was lost before does not matter) and within ttl (the
// records' lifetime) of now, each with idClockSkew to spare: then its
// first send reached the server after since and less than ttl ago.
//
// Only a client whose clock ran more than idClockSkew ahead when it made
// id can be wrong here; its retry then gets a new seq at accept, the save
// stage finds the original (uk_sender_client_msg) and its ACK(saved) names
// the original — what any send costs whose lookup is over
// two_phase.duplicate_check_wait. docs/pipeline.md, "Idempotency".
func recentClientMsgID(id string, now, since time.Time, ttl time.Duration) bool {
	if len(id) != 36 { // the canonical form only: 8-4-4-4-12 hex digits
		return false
	}
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
		return false
	}
	made := time.UnixMilli(int64(binary.BigEndian.Uint64(u[:8]) >> 16))
	return made.After(since.Add(idClockSkew)) && made.After(now.Add(-ttl+2*idClockSkew)) && !made.After(now.Add(idClockSkew))
}

// recordsKept is the accept step's RecordsKept, since moved to this
// process's last send saved without Redis if that is later.
func (s *Service) recordsKept() (since time.Time, ttl time.Duration) {
	since, ttl = s.records.RecordsKept()
	if fb := time.UnixMilli(s.fallbackAt.Load()); fb.After(since) {
		since = fb
	}
	return since, ttl
}
