package privacy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/group"
	"github.com/nexo-im/nexo/services/privacy"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

var quiet = slog.New(slog.DiscardHandler)

// noGroups is a group service with no groups.
type noGroups struct{}

func (noGroups) LeaveAll(context.Context, string) (group.LeftGroups, error) {
	return group.LeftGroups{}, nil
}

func (noGroups) List(context.Context, string, string, int) (group.GroupList, error) {
	return group.GroupList{Groups: []group.GroupJSON{}}, nil
}

// heapWatch is a writer that samples the heap every few writes and keeps
// the highest figure it saw, passing the bytes on to w.
type heapWatch struct {
	w       io.Writer
	writes  int
	bytes   int64
	maxHeap uint64
}

func (h *heapWatch) Write(p []byte) (int, error) {
	h.writes++
	h.bytes += int64(len(p))
	if h.writes%8 == 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		h.maxHeap = max(h.maxHeap, ms.HeapAlloc)
	}
	return h.w.Write(p)
}

// TestExportStreamsInConstantMemory: the export of a user with 100,000
// messages (on MariaDB) is complete and valid JSON, and the heap while it
// is written stays far below the size of what is written: the export
// never holds the history, only a page of it.
func TestExportStreamsInConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts 100,000 messages")
	}
	db := storetest.MySQL(t)
	ctx := context.Background()
	users, msgs := store.NewUserRepo(db), store.NewMessageRepo(db)
	for _, id := range []string{"exa", "exb"} {
		if _, err := users.Create(ctx, domain.User{ID: id, Nickname: id}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 100_000
	text := strings.Repeat("export me ", 30)
	conv := domain.SingleConversationID("exa", "exb")
	batch := make([]domain.Message, 0, 1000)
	for seq := int64(1); seq <= n; seq++ {
		from, to := "exa", "exb"
		if seq%2 == 0 {
			from, to = to, from
		}
		batch = append(batch, domain.Message{ServerMsgID: fmt.Sprint("s-", seq), ClientMsgID: fmt.Sprint("c-", seq), ConversationID: conv,
			Seq: seq, SenderID: from, RecvID: to, SessionType: domain.SessionSingle, MsgType: domain.MsgText,
			Content: domain.Content{Text: text}, Status: domain.StatusNormal, SendAt: 1700000000000 + seq})
		if len(batch) == cap(batch) {
			if _, err := msgs.SaveBatch(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	svc := privacy.NewService(privacy.Deps{Users: users, Groups: noGroups{}, Store: store.NewPrivacyRepo(db), Log: quiet})

	out, err := os.Create(filepath.Join(t.TempDir(), "export.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	w := &heapWatch{w: out}
	began := time.Now()
	if err := svc.Export(ctx, "exa", w); err != nil {
		t.Fatal(err)
	}
	growth := int64(w.maxHeap) - int64(base.HeapAlloc)
	t.Logf("exported %d messages, %.1f MB in %v; heap %.1f MB before, at most %.1f MB during (+%.1f MB)",
		n, float64(w.bytes)/1e6, time.Since(began), float64(base.HeapAlloc)/1e6, float64(w.maxHeap)/1e6, float64(growth)/1e6)
	if w.bytes < 30e6 {
		t.Fatalf("the export is %d bytes: too small to tell streaming from buffering", w.bytes)
	}
	// Buffered, the heap would grow by at least the output's size; a page
	// of 500 messages is ~0.5 MB, and the garbage between two collections
	// a few times that.
	if limit := int64(16 << 20); growth > limit {
		t.Fatalf("the heap grew by %d bytes while exporting %d bytes (limit %d)", growth, w.bytes, limit)
	}

	if _, err := out.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		User struct {
			UserID string `json:"user_id"`
		} `json:"user"`
		Conversations []json.RawMessage `json:"conversations"`
		Messages      []struct {
			Seq      int64  `json:"seq"`
			SenderID string `json:"sender_id"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(out).Decode(&doc); err != nil {
		t.Fatalf("the export is not JSON: %v", err)
	}
	if doc.User.UserID != "exa" || len(doc.Conversations) != 1 || len(doc.Messages) != n {
		t.Fatalf("export: user %q, %d conversations, %d messages", doc.User.UserID, len(doc.Conversations), len(doc.Messages))
	}
	for i, m := range doc.Messages {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
	}
}
