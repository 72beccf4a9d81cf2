package media

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/streams"
)

var _ chat.Objects = (*Service)(nil)

// families a message type's object must be of ("" for any).
func familyFor(t domain.MsgType) string {
	switch t {
	case domain.MsgPicture:
		return familyImage
	case domain.MsgVoice:
		return familyAudio
	case domain.MsgVideo:
		return familyVideo
	}
	return ""
}

// Attach implements chat.Objects: the object must exist, be complete,
// belong to the sender or already be carried by a message of the
// conversation (a forward within it), and its sniffed type must fit the
// message type: 102 an image, 103 audio, 104 video, 105 anything.
func (s *Service) Attach(ctx context.Context, sender, conversationID string, msgType domain.MsgType, objectID string) (chat.ObjectMeta, error) {
	if !validObjectID(objectID) {
		return chat.ObjectMeta{}, domain.BadField("content.object_id", "must be an object ID (o + 32 hex characters)")
	}
	o, err := s.repo.Get(ctx, objectID)
	if err != nil {
		return chat.ObjectMeta{}, s.refuse(err)
	}
	if o.State != domain.ObjectComplete {
		return chat.ObjectMeta{}, s.refuse(domain.NewError(domain.ErrObjectIncomplete, "the object's upload is not completed"))
	}
	if o.OwnerID != sender {
		in, err := s.repo.InConversation(ctx, objectID, conversationID)
		if err != nil {
			return chat.ObjectMeta{}, err
		}
		if !in {
			return chat.ObjectMeta{}, s.refuse(domain.NewError(domain.ErrObjectAccessDenied, "a message may carry the sender's own objects, or objects already sent in that conversation"))
		}
	}
	if f := familyFor(msgType); f != "" && family(o.ContentType) != f {
		return chat.ObjectMeta{}, s.refuse(domain.NewError(domain.ErrObjectTypeMismatch,
			fmt.Sprintf("msg_type %d needs %s; the object is %s", msgType, f, o.ContentType)))
	}
	// A send in flight is saved (and its reference recorded) well within
	// half the orphan TTL; an older object gets its clock restarted so the
	// cleaner cannot take it in between.
	if now := s.now(); o.CreatedAt < now.Add(-s.cfg.OrphanTTL/2).UnixMilli() {
		if err := s.repo.Touch(ctx, o.ID, now.UnixMilli()); err != nil {
			return chat.ObjectMeta{}, err
		}
	}
	return chat.ObjectMeta{Name: o.Name, ContentType: o.ContentType, Size: o.Size, SHA256: o.SHA256,
		Width: o.Width, Height: o.Height, HasThumbnail: o.HasThumbnail()}, nil
}

// AfterSave records which saved messages carry which objects (the save
// stage's and the synchronous send's hook): access to an object follows
// the visibility of those messages, and the cleaner keeps what they carry.
// Idempotent: a message saved again records nothing new. It writes the
// references itself (a database error retries the save batch) and adds
// nothing to any queue.
func (s *Service) AfterSave(ctx context.Context, msgs []domain.Message, _ []bool) ([]streams.Append, error) {
	for i := range msgs {
		id := chat.ObjectIDOf(&msgs[i])
		if id == "" {
			continue
		}
		m := &msgs[i]
		if err := s.repo.AddRef(ctx, domain.ObjectRef{ObjectID: id, ConversationID: m.ConversationID, Seq: m.Seq, ServerMsgID: m.ServerMsgID}); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
