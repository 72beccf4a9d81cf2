package store_test

import (
	"context"
	"errors"
	"fmt"
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

// TestDeletedMessagesTakeTheirRefs: retention and erasure delete the
// object_refs rows of the messages they delete, with them; an object
// still carried by a message left is no orphan, one with no ref left is.
func TestDeletedMessagesTakeTheirRefs(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			db := b.Open(t)
			r, priv := store.NewObjectRepo(db), store.NewPrivacyRepo(db)
			for _, u := range []string{"ann", "ben"} {
				if _, err := store.NewUserRepo(db).Create(ctx, domain.User{ID: u, Nickname: u}); err != nil {
					t.Fatal(err)
				}
			}
			objs := []string{"o00000000000000000000000000000011", "o00000000000000000000000000000012", "o00000000000000000000000000000013"}
			for _, id := range objs {
				if err := r.Create(ctx, &domain.Object{ID: id, OwnerID: "ann", Purpose: domain.PurposeMessage, Key: "o/" + id[1:],
					Name: "a.png", ContentType: "image/png", Size: 1, State: domain.ObjectComplete, Thumb: domain.ThumbNone, CreatedAt: 1000}); err != nil {
					t.Fatal(err)
				}
			}
			// seq 1 (old) and 2 (new) carry objs[0]; 3 (old) objs[1]; 4 (ben's, new) objs[2].
			conv := "si_ann_ben"
			carried := []struct {
				obj    string
				sender string
				sendAt int64
			}{{objs[0], "ann", 100}, {objs[0], "ann", 9000}, {objs[1], "ann", 100}, {objs[2], "ben", 9000}}
			var msgs []domain.Message
			for i, c := range carried {
				seq := int64(i + 1)
				recv := map[string]string{"ann": "ben", "ben": "ann"}[c.sender]
				msgs = append(msgs, domain.Message{ServerMsgID: fmt.Sprint("rm", seq), ClientMsgID: fmt.Sprint("rc", seq), ConversationID: conv,
					Seq: seq, SenderID: c.sender, RecvID: recv, SessionType: domain.SessionSingle, MsgType: domain.MsgPicture,
					Content: domain.Content{Image: `{"object_id":"` + c.obj + `"}`}, Status: domain.StatusNormal, SendAt: c.sendAt})
			}
			if _, err := store.NewMessageRepo(db).SaveBatch(ctx, msgs); err != nil {
				t.Fatal(err)
			}
			for i, m := range msgs {
				if err := r.AddRef(ctx, domain.ObjectRef{ObjectID: carried[i].obj, ConversationID: conv, Seq: m.Seq, ServerMsgID: m.ServerMsgID}); err != nil {
					t.Fatal(err)
				}
			}
			orphans := func() []string {
				t.Helper()
				os, err := r.Orphans(ctx, 5000, 10)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, o := range os {
					ids = append(ids, o.ID)
				}
				return ids
			}
			if got := orphans(); len(got) != 0 {
				t.Fatalf("orphans before any deletion: %v", got)
			}
			if n, err := priv.DeleteExpired(ctx, conv, nil, 5000, 100); err != nil || n != 2 {
				t.Fatalf("expired %d, %v", n, err)
			}
			if refs, _ := r.Refs(ctx, objs[0], 10); len(refs) != 1 || refs[0].Seq != 2 {
				t.Fatalf("refs of the object a new message still carries: %+v", refs)
			}
			if refs, _ := r.Refs(ctx, objs[1], 10); len(refs) != 0 {
				t.Fatalf("refs of an expired message stay: %+v", refs)
			}
			if got := orphans(); len(got) != 1 || got[0] != objs[1] {
				t.Fatalf("orphans after the expiry = %v, want only %s", got, objs[1])
			}
			// Erasing ann without her messages keeps seq 2's ref; erasing
			// ben with his takes seq 4's.
			if err := priv.EraseUser(ctx, "ann", store.EraseOptions{}); err != nil {
				t.Fatal(err)
			}
			if refs, _ := r.Refs(ctx, objs[0], 10); len(refs) != 1 {
				t.Fatalf("erasure without messages took a ref: %+v", refs)
			}
			if err := priv.EraseUser(ctx, "ben", store.EraseOptions{Messages: true}); err != nil {
				t.Fatal(err)
			}
			if refs, _ := r.Refs(ctx, objs[2], 10); len(refs) != 0 {
				t.Fatalf("refs of erased messages stay: %+v", refs)
			}
			if got := orphans(); len(got) != 2 || got[0] == objs[0] || got[1] == objs[0] {
				t.Fatalf("orphans after the erasure = %v", got)
			}
		})
	}
}
