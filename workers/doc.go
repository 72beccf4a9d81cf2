// Package workers runs the pipeline's stages behind the accept step: the
// save stage (batched, idempotent persistence, then ACK(saved)) and the
// deliver stage (fanout to online connections). Each stage is a consumer
// group on every shard's stream; a stage acknowledges its input only in the
// same atomic step that writes its output (the next stage's entry, or after
// the database commit). docs/pipeline.md states the guarantees.
package workers

import (
	"context"

	"github.com/nexo-im/nexo/domain"
)

// Pusher reaches online connections. Its implementation is
// services/chat.Pusher (wired by cmd/app over the gateway's ws.Pushes);
// pushes are best-effort and at-least-once (clients dedupe by
// (conversation_id, seq)).
type Pusher interface {
	// PushMessage sends m as a 2001 push to every online connection of
	// userIDs except the connection exceptConn ("" for none).
	PushMessage(ctx context.Context, m *domain.Message, userIDs []string, exceptConn string)
	// PushAck sends a 2101 ACK push to every connection of userID.
	PushAck(ctx context.Context, userID string, ack domain.Ack)
	// PushSaveFailed sends a 3001 error push (reason save_failed, naming
	// the client_msg_id) to every connection of the sender of m.
	PushSaveFailed(ctx context.Context, m *domain.Message)
}
