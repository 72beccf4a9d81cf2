package search

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/store"
)

// ReindexRun names the reindex's progress row in the search_state table:
// there is one reindex at a time per database.
const ReindexRun = "reindex"

// ReindexStore is what the reindex reads and writes (store.SearchRepo):
// stored messages by id, the search table, and the run's progress.
type ReindexStore interface {
	IndexWriter
	MessagesAfter(ctx context.Context, afterID, since int64, limit int) (store.ReindexPage, error)
	CountMessagesAfter(ctx context.Context, afterID, since int64) (int64, error)
	ReindexState(ctx context.Context, name string) (afterID, since int64, err error)
	SaveReindexState(ctx context.Context, name string, afterID, since int64) error
	ClearReindexState(ctx context.Context, name string) error
}

// ReindexProgress hears how far a reindex is. Start is called once with
// the messages left to read; Add after each batch with how many it read.
type ReindexProgress interface {
	Start(total int64)
	Add(n int)
}

// ReindexResult says what a reindex run did.
type ReindexResult struct {
	// ResumedAfter is the message id an interrupted run had reached, 0
	// for a run from the start.
	ResumedAfter int64
	// Read counts the stored messages read; Indexed the searchable ones
	// among them, written (a message already indexed is skipped by the
	// table's key, and counted here all the same).
	Read, Indexed int64
}

// Reindexer fills the search table from the messages table: for existing
// data, after the index stream lost entries, or after a backend change. It
// decides what is searchable with DocOf, as the indexing stage does, and
// writes with the same idempotent Index, so running it again, or while
// the stage runs, changes nothing already indexed.
type Reindexer struct {
	repo  ReindexStore
	batch int
}

// NewReindexer returns a reindexer reading batch messages per step
// (at least 1).
func NewReindexer(repo ReindexStore, batch int) *Reindexer {
	return &Reindexer{repo: repo, batch: max(batch, 1)}
}

// Run indexes the stored messages sent at or after since (Unix ms, 0 =
// all), in batches by message id. After each batch it records the id it
// reached, so a run stopped by ctx (or a crash) resumes there when started
// again with the same since; a different since starts over. A finished run
// forgets its progress. progress may be nil.
func (r *Reindexer) Run(ctx context.Context, since int64, progress ReindexProgress) (ReindexResult, error) {
	var res ReindexResult
	afterID, savedSince, err := r.repo.ReindexState(ctx, ReindexRun)
	if err != nil {
		return res, fmt.Errorf("read reindex progress: %w", err)
	}
	if savedSince != since {
		afterID = 0
	}
	res.ResumedAfter = afterID
	total, err := r.repo.CountMessagesAfter(ctx, afterID, since)
	if err != nil {
		return res, fmt.Errorf("count messages to reindex: %w", err)
	}
	if progress != nil {
		progress.Start(total)
	}
	for {
		page, err := r.repo.MessagesAfter(ctx, afterID, since, r.batch)
		if err != nil {
			return res, err
		}
		if len(page.Messages) == 0 {
			break
		}
		docs := make([]store.SearchDoc, 0, len(page.Messages))
		for i := range page.Messages {
			if d, ok := DocOf(&page.Messages[i]); ok {
				docs = append(docs, d)
			}
		}
		if len(docs) > 0 {
			if err := r.repo.Index(ctx, docs); err != nil {
				return res, err
			}
		}
		afterID = page.LastID
		if err := r.repo.SaveReindexState(ctx, ReindexRun, afterID, since); err != nil {
			return res, fmt.Errorf("save reindex progress at id %d: %w", afterID, err)
		}
		res.Read += int64(len(page.Messages))
		res.Indexed += int64(len(docs))
		if progress != nil {
			progress.Add(len(page.Messages))
		}
	}
	if err := r.repo.ClearReindexState(ctx, ReindexRun); err != nil {
		return res, fmt.Errorf("clear reindex progress: %w", err)
	}
	return res, nil
}
