package search

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/streams"
)

// Group is the consumer group of the index stream: each entry is indexed
// by one instance.
const Group = "search"

// docField is the entry field holding a SearchDoc as JSON.
const docField = "doc"

// Keys are the index stream and its dead-letter stream.
type Keys struct {
	Index, Dead string
}

// NewKeys returns the stream names under prefix (redis.key_prefix).
func NewKeys(prefix string) Keys {
	return Keys{Index: prefix + ":{search}:index", Dead: prefix + ":{search}:dead"}
}

// Enqueuer is the save stage's AfterSave hook (and the synchronous
// path's): it makes the index stream's entry of each saved message's
// searchable part, which the save's commit adds (streams.Commit.Appends),
// so the save waits neither for the index nor for a round trip of its own.
type Enqueuer struct {
	keys Keys
}

// NewEnqueuer returns the hook.
func NewEnqueuer(keys Keys) *Enqueuer {
	return &Enqueuer{keys: keys}
}

// AfterSave implements the save stage's AfterSave: one index entry per
// searchable message (DocOf). An error (encoding) retries the save batch;
// an entry added twice (a redelivered batch) is indexed once
// (store.SearchRepo.Index).
func (e *Enqueuer) AfterSave(_ context.Context, msgs []domain.Message, _ []bool) ([]streams.Append, error) {
	var out []streams.Append
	for i := range msgs {
		d, ok := DocOf(&msgs[i])
		if !ok {
			continue
		}
		b, err := json.Marshal(docJSON(d))
		if err != nil {
			return nil, fmt.Errorf("encode search doc: %w", err)
		}
		out = append(out, streams.Append{Stream: e.keys.Index, Values: []any{docField, b}})
	}
	return out, nil
}

// indexDoc is store.SearchDoc on the index stream.
type indexDoc struct {
	ConversationID string `json:"c"`
	Seq            int64  `json:"s"`
	SessionType    int    `json:"t"`
	SenderID       string `json:"f"`
	RecvID         string `json:"r,omitempty"`
	GroupID        string `json:"g,omitempty"`
	MsgType        int    `json:"m"`
	SendAt         int64  `json:"a"`
	Field          string `json:"k"`
	Body           string `json:"b"`
}

func docJSON(d store.SearchDoc) indexDoc {
	return indexDoc{ConversationID: d.ConversationID, Seq: d.Seq, SessionType: int(d.SessionType), SenderID: d.SenderID,
		RecvID: d.RecvID, GroupID: d.GroupID, MsgType: int(d.MsgType), SendAt: d.SendAt, Field: d.Field, Body: d.Body}
}

func (j indexDoc) doc() store.SearchDoc {
	return store.SearchDoc{ConversationID: j.ConversationID, Seq: j.Seq, SessionType: domain.SessionType(j.SessionType),
		SenderID: j.SenderID, RecvID: j.RecvID, GroupID: j.GroupID, MsgType: domain.MsgType(j.MsgType), SendAt: j.SendAt,
		Field: j.Field, Body: j.Body}
}

// IndexWriter writes search docs, idempotently (store.SearchRepo).
type IndexWriter interface {
	Index(ctx context.Context, docs []store.SearchDoc) error
}

// Indexer is the indexing stage: it reads the index stream on a
// streams.Consumer and writes each read to the search table in one batch,
// then acknowledges and deletes the entries. A failed write retries the
// batch (backing off); a malformed entry is dead-lettered at once.
type Indexer struct {
	rdb      redis.UniversalClient
	keys     Keys
	repo     IndexWriter
	log      *slog.Logger
	consumer *streams.Consumer
}

// NewIndexer returns the stage; consumer is this instance's stable name,
// batch the most entries one read takes (search.index_batch), wait how long
// it lets entries gather after a read that was not full
// (search.index_wait; 0: none).
func NewIndexer(rdb redis.UniversalClient, keys Keys, repo IndexWriter, consumer string, batch int, wait time.Duration, log *slog.Logger) *Indexer {
	x := &Indexer{rdb: rdb, keys: keys, repo: repo, log: log}
	x.consumer = streams.NewConsumer(rdb, streams.ConsumerConfig{
		Stream: keys.Index, Group: Group, Consumer: consumer, Count: batch, Block: time.Second, Pace: wait,
		ClaimMinIdle: 30 * time.Second, TrimInterval: time.Minute,
		// Without MaxAttempts a failing database is retried until it is
		// back: a message left out of the index is only found again by a
		// reindex.
		Retry: streams.RetryPolicy{Backoff: 100 * time.Millisecond, BackoffMax: 10 * time.Second},
		DeadLetter: &streams.DeadLetters{Redis: rdb, Input: keys.Index, Group: Group, Stream: keys.Dead,
			MaxLen: 10_000, BodyField: docField, MaxBody: 4096, DeleteInput: true},
	}, log.With("component", "search indexer"))
	return x
}

// EnsureGroup creates the stream and its group if missing.
func (x *Indexer) EnsureGroup(ctx context.Context) error {
	return streams.EnsureGroup(ctx, x.rdb, x.keys.Index, Group)
}

// Run indexes until ctx is done, finishing the batch in hand.
func (x *Indexer) Run(ctx context.Context) error {
	// The consumer creates its group first, and a shutdown before that is
	// a clean stop.
	return x.consumer.Run(ctx, x.handle)
}

// handle indexes one read: malformed entries fail on their own, the rest
// are written in one batch and acknowledged.
func (x *Indexer) handle(ctx context.Context, entries []redis.XMessage) error {
	failures := streams.Failures{}
	docs := make([]store.SearchDoc, 0, len(entries))
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		raw, _ := e.Values[docField].(string)
		var j indexDoc
		if err := json.Unmarshal([]byte(raw), &j); err != nil || j.ConversationID == "" {
			failures[e.ID] = streams.Permanent(fmt.Errorf("malformed search entry: %v", err))
			continue
		}
		docs = append(docs, j.doc())
		ids = append(ids, e.ID)
	}
	if len(docs) > 0 {
		if err := x.repo.Index(ctx, docs); err != nil {
			return fmt.Errorf("index %d messages: %w", len(docs), err)
		}
	}
	if err := streams.AckDelete(ctx, x.rdb, x.keys.Index, Group, ids); err != nil {
		// Indexed but not acknowledged: indexed again, which changes nothing.
		x.log.Warn("search index ack failed", "entries", len(ids), "err", err)
	}
	return failures.Err()
}
