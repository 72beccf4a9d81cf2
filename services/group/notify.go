package group

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
)

// Notification message types (msg_type) of group changes. Each change is a
// message in the group conversation with its own seq, so clients learn of
// it in order with the chat (docs/groups.md). 1501–1519 are reserved for
// groups.
const (
	NotifyGroupCreated     domain.MsgType = 1501
	NotifyMemberJoined     domain.MsgType = 1502
	NotifyMemberInvited    domain.MsgType = 1503
	NotifyMemberQuit       domain.MsgType = 1504
	NotifyMemberKicked     domain.MsgType = 1505
	NotifyOwnerTransferred domain.MsgType = 1506
	NotifyRoleChanged      domain.MsgType = 1507
	NotifyGroupDismissed   domain.MsgType = 1508
	NotifyGroupUpdated     domain.MsgType = 1509
	NotifyMemberMuted      domain.MsgType = 1510
	NotifyGroupMuted       domain.MsgType = 1511
	NotifyMemberBanned     domain.MsgType = 1512
	NotifyMemberUnbanned   domain.MsgType = 1513
)

var notifyNames = map[domain.MsgType]string{
	NotifyGroupCreated: "group_created", NotifyMemberJoined: "member_joined", NotifyMemberInvited: "member_invited",
	NotifyMemberQuit: "member_quit", NotifyMemberKicked: "member_kicked", NotifyOwnerTransferred: "owner_transferred",
	NotifyRoleChanged: "role_changed", NotifyGroupDismissed: "group_dismissed", NotifyGroupUpdated: "group_updated",
	NotifyMemberMuted: "member_muted", NotifyGroupMuted: "group_muted", NotifyMemberBanned: "member_banned",
	NotifyMemberUnbanned: "member_unbanned",
}

// NotificationJSON is the content.custom of a group notification.
// UserIDs are the users the change is about: the members of a new group,
// who joined, was invited, quit or was kicked, the new owner, the member
// whose role changed, muted, banned or unbanned. Group is the group after
// the change (created, transferred, dismissed, updated); Changed lists the
// fields an update changed; MuteUntil is when a member's mute ends (0:
// lifted); Muted is a group mute's new state.
type NotificationJSON struct {
	GroupID    string     `json:"group_id"`
	OpUserID   string     `json:"op_user_id"`
	UserIDs    []string   `json:"user_ids,omitempty"`
	RoleLevel  int        `json:"role_level,omitempty"`
	OldOwnerID string     `json:"old_owner_id,omitempty"`
	NewOwnerID string     `json:"new_owner_id,omitempty"`
	Changed    []string   `json:"changed,omitempty"`
	Group      *GroupJSON `json:"group,omitempty"`
	MuteUntil  int64      `json:"mute_until,omitempty"`
	Muted      *bool      `json:"muted,omitempty"`
}

// Notifier sends a server-made message through the message pipeline
// (chat.Service.SendSystem) and returns its ACK; the seq orders the change
// among the conversation's messages.
type Notifier interface {
	SendSystem(ctx context.Context, m domain.Message) (chat.AckJSON, error)
}

// notify sends one notification from op (the member who caused it) and
// returns its seq.
func (s *Service) notify(ctx context.Context, t domain.MsgType, n NotificationJSON) (int64, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return 0, fmt.Errorf("encode %s notification: %w", notifyNames[t], err)
	}
	ack, err := s.notifier.SendSystem(ctx, domain.Message{
		ConversationID: domain.GroupConversationID(n.GroupID), SenderID: n.OpUserID, GroupID: n.GroupID,
		SessionType: domain.SessionGroup, MsgType: t, Content: domain.Content{Custom: string(body)},
	})
	if err != nil {
		return 0, fmt.Errorf("send %s notification of group %s: %w", notifyNames[t], n.GroupID, err)
	}
	s.metrics.notifications.WithLabelValues(notifyNames[t]).Inc()
	return ack.Seq, nil
}

// notificationTargets returns the users a join or leave notification is
// about, who must get it even when the member cache does not show them as
// active members: new members (the change may not be written yet when the
// notification is fanned out) and members who quit or were kicked (their
// cap is the notification's seq, so they see it). nil for any other message.
func notificationTargets(m *domain.Message) []string {
	switch m.MsgType {
	case NotifyGroupCreated, NotifyMemberJoined, NotifyMemberInvited, NotifyMemberQuit, NotifyMemberKicked, NotifyMemberBanned:
	default:
		return nil
	}
	var n struct {
		UserIDs []string `json:"user_ids"`
	}
	if err := json.Unmarshal([]byte(m.Content.Custom), &n); err != nil {
		return nil
	}
	return n.UserIDs
}
