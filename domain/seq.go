package domain

// SeqLease is a block of seqs leased from the database to the Redis
// allocator: seqs in (Base, Ceiling] may be handed out, and the database's
// reserved ceiling is already at least Ceiling, so none of them can be
// issued twice even if Redis loses every key (see docs/pipeline.md).
type SeqLease struct {
	ConversationID string
	Base           int64
	Ceiling        int64
}

// Cursor is one member's progress in one conversation. MinSeq and MaxSeq
// bound what the member may see (MaxSeq 0 = no upper bound; set when a
// member quits or is kicked, see docs/groups.md); DeliveredSeq and ReadSeq
// only ever move forward.
type Cursor struct {
	UserID         string
	ConversationID string
	MinSeq         int64
	MaxSeq         int64
	ReadSeq        int64
	DeliveredSeq   int64
}
