package domain

// AckType is the kind of an acknowledgement (2101 pushes, 1101 requests).
type AckType string

// Ack types. accepted and saved go to the sender; delivered and read move a
// member's cursors and are echoed to the other party; revoked answers a recall.
const (
	AckAccepted  AckType = "accepted"
	AckSaved     AckType = "saved"
	AckDelivered AckType = "delivered"
	AckRead      AckType = "read"
	AckRevoked   AckType = "revoked"
)

// Ack acknowledges one message. UserID is the member whose cursor moved
// (delivered/read receipts); SendAt is Unix ms.
type Ack struct {
	Type           AckType
	ServerMsgID    string
	ClientMsgID    string
	ConversationID string
	Seq            int64
	SendAt         int64
	UserID         string
}
