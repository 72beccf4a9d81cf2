package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
	"github.com/nexo-im/nexo/store/storetest"
)

func TestObjectRepo(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			db := b.Open(t)
			r := store.NewObjectRepo(db)
			done := domain.Object{ID: "o00000000000000000000000000000001", OwnerID: "alice", Purpose: domain.PurposeMessage, Key: "o/1",
				Name: "a.png", ContentType: "image/png", Size: 100, State: domain.ObjectComplete, Thumb: domain.ThumbPending, CreatedAt: 1000}
			up := domain.Object{ID: "o00000000000000000000000000000002", OwnerID: "alice", Purpose: domain.PurposeMessage, Key: "o/2",
				Name: "b.bin", Size: 50, State: domain.ObjectUploading, Thumb: domain.ThumbNone, UploadID: "x", PartSize: 8, CreatedAt: 2000}
			for _, o := range []*domain.Object{&done, &up} {
				if err := r.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			if used, err := r.UsedBytes(ctx, "alice"); err != nil || used != 150 {
				t.Fatalf("used = %d, %v", used, err)
			}
			if used, _ := r.UsedBytes(ctx, "bob"); used != 0 {
				t.Fatalf("bob used %d", used)
			}
			if _, err := r.Get(ctx, "o-none"); !errors.Is(err, domain.ErrObjectNotFound) {
				t.Fatalf("missing: %v", err)
			}
			if err := r.Complete(ctx, &done); !errors.Is(err, domain.ErrUploadNotFound) {
				t.Fatalf("complete a complete object: %v", err)
			}
			up.SHA256, up.ContentType = "ab", "application/zip"
			if err := r.Complete(ctx, &up); err != nil {
				t.Fatal(err)
			}
			got, _ := r.Get(ctx, up.ID)
			if got.State != domain.ObjectComplete || got.ContentType != "application/zip" || got.UploadID != "" || got.PartSize != 8 {
				t.Fatalf("completed = %+v", got)
			}
			ref := domain.ObjectRef{ObjectID: done.ID, ConversationID: "si_a_b", Seq: 3, ServerMsgID: "m3"}
			if _, err := store.NewMessageRepo(db).SaveBatch(ctx, []domain.Message{{ServerMsgID: "m3", ClientMsgID: "c3", ConversationID: "si_a_b",
				Seq: 3, SenderID: "a", RecvID: "b", SessionType: domain.SessionSingle, MsgType: domain.MsgPicture,
				Content: domain.Content{Image: `{"object_id":"` + done.ID + `"}`}, Status: domain.StatusNormal, SendAt: 1}}); err != nil {
				t.Fatal(err)
			}
			for range 2 { // idempotent
				if err := r.AddRef(ctx, ref); err != nil {
					t.Fatal(err)
				}
			}
			if refs, _ := r.Refs(ctx, done.ID, 10); len(refs) != 1 || refs[0] != ref {
				t.Fatalf("refs = %+v", refs)
			}
			if in, _ := r.InConversation(ctx, done.ID, "si_a_b"); !in {
				t.Fatal("not in its conversation")
			}
			if in, _ := r.InConversation(ctx, done.ID, "si_a_c"); in {
				t.Fatal("in another conversation")
			}
			orphans, err := r.Orphans(ctx, 5000, 10)
			if err != nil || len(orphans) != 1 || orphans[0].ID != up.ID {
				t.Fatalf("orphans = %+v, %v", orphans, err)
			}
			// Once its one message is recalled, the object is an orphan too.
			if _, err := store.NewRevokeRepo(db).Revoke(ctx, "si_a_b", 3); err != nil {
				t.Fatal(err)
			}
			if orphans, _ := r.Orphans(ctx, 5000, 10); len(orphans) != 2 {
				t.Fatalf("orphans after the recall = %+v", orphans)
			}
			if p, _ := r.PendingThumbs(ctx, 5000, 10); len(p) != 1 || p[0].ID != done.ID {
				t.Fatalf("pending thumbs = %+v", p)
			}
			if err := r.SetThumb(ctx, done.ID, domain.ThumbReady); err != nil {
				t.Fatal(err)
			}
			if total, _ := r.TotalBytes(ctx); total != 150 {
				t.Fatalf("total = %d", total)
			}
			if err := r.Delete(ctx, done.ID); err != nil {
				t.Fatal(err)
			}
			if refs, _ := r.Refs(ctx, done.ID, 10); len(refs) != 0 {
				t.Fatalf("refs after delete = %+v", refs)
			}
		})
	}
}
