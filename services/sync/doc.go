// Package sync keeps what each member has of each conversation, and what
// it sees of it: the delivered and read cursors (the single source of
// truth for receipts) written through a coalescing writer, the receipts
// pushed when a cursor moves, offline resend on connect, the newest seqs
// (1001, 1006), the conversation list and its settings, recall (1102),
// and mention checks. docs/sync.md describes the rules and their costs;
// docs/protocol.md the frames and endpoints. Its HTTP routes and WebSocket
// requests are in gateway/routes (sync.go).
package sync
