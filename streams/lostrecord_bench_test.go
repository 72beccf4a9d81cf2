package streams

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/nexo-im/nexo/domain"
)

// BenchmarkLostCheckRecord: what remembering one accept costs the accept
// step, over a 30 s window at 8,000 accepts a second on 8 shards (the
// 50-pair closed loop here), the IDs as the SDK and the server make them.
func BenchmarkLostCheckRecord(b *testing.B) {
	c := &lostCheck{window: 30 * time.Second, max: 50000, recent: map[int]*acceptRing{}, epoch: time.Now()}
	msgs := make([]domain.Message, 4096)
	for i := range msgs {
		s, r := fmt.Sprintf("nb90c237ef-s%d", i%50), fmt.Sprintf("nb90c237ef-r%d", i%50)
		msgs[i] = domain.Message{ServerMsgID: uuid.Must(uuid.NewV7()).String(), ClientMsgID: uuid.Must(uuid.NewV7()).String(),
			ConversationID: domain.SingleConversationID(s, r), SenderID: s, RecvID: r, SendAt: time.Now().UnixMilli()}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r, _ := newRecentAccept(&msgs[i%len(msgs)], int64(i), time.Duration(i)*125*time.Microsecond)
		q := c.recent[i%8]
		if q == nil {
			q = &acceptRing{}
			c.recent[i%8] = q
		}
		q.push(r, c.window, c.max)
	}
}
