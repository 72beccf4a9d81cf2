package group

import (
	"time"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
)

// Join policies (group JSON join_policy). invite_only is the default: a
// group ID alone lets nobody in. An open group is joined with /group/join;
// on an approval group /group/join files an application that the owner or
// an admin answers. Only an open group's /group/info is public.
const (
	PolicyOpen       = "open"
	PolicyInviteOnly = "invite_only"
	PolicyApproval   = "approval"
)

// checkPolicy accepts "" (the default) and the policies.
func checkPolicy(field, p string) error {
	if p != "" && p != PolicyOpen && p != PolicyInviteOnly && p != PolicyApproval {
		return domain.BadField(field, "must be %q, %q or %q", PolicyInviteOnly, PolicyOpen, PolicyApproval)
	}
	return nil
}

// checkInvitePermission accepts "" (the server's group.invite_permission)
// and the permissions.
func checkInvitePermission(field, p string) error {
	if p != "" && p != configs.InviteByMembers && p != configs.InviteByAdmins {
		return domain.BadField(field, "must be %q or %q", configs.InviteByMembers, configs.InviteByAdmins)
	}
	return nil
}

// Field limits (the schema's column sizes).
const (
	maxNameLen         = 128
	maxIntroductionLen = 512
	maxAvatarLen       = 512
	// MaxMembersPage caps limit of GET /group/members.
	MaxMembersPage = 500
	// DefaultMembersPage is limit of GET /group/members when absent.
	DefaultMembersPage = 100
	// MaxListPage caps limit of GET /group/list and GET /group/applications.
	MaxListPage = 500
	// DefaultListPage is their limit when absent.
	DefaultListPage = 100
	maxReqMsgLen    = 255
)

// GroupJSON is a group on the wire. Times are Unix milliseconds.
type GroupJSON struct {
	GroupID      string `json:"group_id"`
	Name         string `json:"name"`
	Introduction string `json:"introduction"`
	Avatar       string `json:"avatar"`
	GroupType    int    `json:"group_type"`
	JoinPolicy   string `json:"join_policy"`
	// InvitePermission is who may add others: "members" or "admins" (the
	// group's setting, else the server's group.invite_permission).
	InvitePermission string `json:"invite_permission"`
	OwnerUserID      string `json:"owner_user_id"`
	CreatorUserID    string `json:"creator_user_id"`
	Status           string `json:"status"`
	MemberCount      int    `json:"member_count"`
	// Muted: only the owner and admins may send (absent when not).
	Muted     bool  `json:"muted,omitempty"`
	CreatedAt int64 `json:"created_at"`
	UpdatedAt int64 `json:"updated_at"`
}

// GroupOf renders g with its number of active members.
func GroupOf(g domain.Group, memberCount int) GroupJSON {
	status := "normal"
	if g.Status == domain.GroupDismissed {
		status = "dismissed"
	}
	return GroupJSON{
		GroupID: g.ID, Name: g.Name, Introduction: g.Introduction, Avatar: g.Avatar, GroupType: g.GroupType,
		JoinPolicy: g.JoinPolicy, InvitePermission: g.InvitePermission, OwnerUserID: g.OwnerUserID, CreatorUserID: g.CreatorUserID, Status: status,
		MemberCount: memberCount, Muted: g.Muted, CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt,
	}
}

// MemberJSON is a group member on the wire: role_level 100 owner, 60 admin,
// 20 member; status "normal", "left", "kicked" or "banned"; join_seq is the first seq
// the member may see. /group/join on an approval group answers status
// "pending" (an application was filed; role_level and join_seq are 0).
type MemberJSON struct {
	GroupID       string `json:"group_id"`
	UserID        string `json:"user_id"`
	RoleLevel     int    `json:"role_level"`
	Status        string `json:"status"`
	JoinSeq       int64  `json:"join_seq"`
	JoinedAt      int64  `json:"joined_at"`
	InviterUserID string `json:"inviter_user_id"`
	// MuteUntil is when the member's mute ends (Unix ms); absent when not
	// muted.
	MuteUntil int64 `json:"mute_until,omitempty"`
}

// MemberOf renders m.
func MemberOf(m domain.GroupMember) MemberJSON {
	status := "normal"
	switch m.Status {
	case domain.MemberLeft:
		status = "left"
	case domain.MemberKicked:
		status = "kicked"
	case domain.MemberBanned:
		status = "banned"
	}
	mj := MemberJSON{GroupID: m.GroupID, UserID: m.UserID, RoleLevel: int(m.RoleLevel), Status: status,
		JoinSeq: m.JoinSeq, JoinedAt: m.JoinedAt, InviterUserID: m.InviterUserID}
	if m.MuteUntil > time.Now().UnixMilli() {
		mj.MuteUntil = m.MuteUntil
	}
	return mj
}

// CreateRequest is the body of POST /group/create.
type CreateRequest struct {
	Name         string   `json:"name"`
	MemberIDs    []string `json:"member_ids"`
	Introduction string   `json:"introduction"`
	Avatar       string   `json:"avatar"`
	GroupType    int      `json:"group_type"`
	// JoinPolicy is "invite_only" (the default when absent), "open" or
	// "approval".
	JoinPolicy string `json:"join_policy"`
	// InvitePermission is "members" or "admins"; absent follows the
	// server's group.invite_permission.
	InvitePermission string `json:"invite_permission"`
}

// Validate checks the fields' shapes; counts and existence are the
// service's.
func (r *CreateRequest) Validate() error {
	if err := checkPolicy("join_policy", r.JoinPolicy); err != nil {
		return err
	}
	if err := checkInvitePermission("invite_permission", r.InvitePermission); err != nil {
		return err
	}
	if err := domain.CheckLen("name", r.Name, 1, maxNameLen); err != nil {
		return err
	}
	if err := domain.CheckIDs("member_ids", r.MemberIDs); err != nil {
		return err
	}
	if err := domain.CheckLen("introduction", r.Introduction, 0, maxIntroductionLen); err != nil {
		return err
	}
	if err := domain.CheckLen("avatar", r.Avatar, 0, maxAvatarLen); err != nil {
		return err
	}
	if r.GroupType < 0 {
		return domain.BadField("group_type", "must be >= 0")
	}
	return nil
}

// JoinRequest is the body of POST /group/join; req_msg (optional, up to
// 255 characters) goes with an application to an approval group.
type JoinRequest struct {
	GroupID string `json:"group_id"`
	ReqMsg  string `json:"req_msg"`
}

// Validate requires group_id.
func (r *JoinRequest) Validate() error {
	if err := domain.CheckID("group_id", r.GroupID); err != nil {
		return err
	}
	return domain.CheckLen("req_msg", r.ReqMsg, 0, maxReqMsgLen)
}

// GroupRequest is the body of POST /group/quit and /group/dismiss.
type GroupRequest struct {
	GroupID string `json:"group_id"`
}

// Validate requires group_id.
func (r *GroupRequest) Validate() error { return domain.CheckID("group_id", r.GroupID) }

// UsersRequest is the body of POST /group/invite and /group/kick.
type UsersRequest struct {
	GroupID string   `json:"group_id"`
	UserIDs []string `json:"user_ids"`
}

// Validate requires group_id and at least one well-formed user ID.
func (r *UsersRequest) Validate() error {
	if err := domain.CheckID("group_id", r.GroupID); err != nil {
		return err
	}
	if len(r.UserIDs) == 0 {
		return domain.BadField("user_ids", "is required (at least one user ID)")
	}
	return domain.CheckIDs("user_ids", r.UserIDs)
}

// TransferRequest is the body of POST /group/transfer.
type TransferRequest struct {
	GroupID    string `json:"group_id"`
	NewOwnerID string `json:"new_owner_id"`
}

// Validate requires both IDs.
func (r *TransferRequest) Validate() error {
	if err := domain.CheckID("group_id", r.GroupID); err != nil {
		return err
	}
	return domain.CheckID("new_owner_id", r.NewOwnerID)
}

// SetRoleRequest is the body of POST /group/set_role.
type SetRoleRequest struct {
	GroupID   string `json:"group_id"`
	UserID    string `json:"user_id"`
	RoleLevel int    `json:"role_level"`
}

// Validate requires the IDs and role_level 60 (admin) or 20 (member); the
// owner changes only by transfer.
func (r *SetRoleRequest) Validate() error {
	if err := domain.CheckID("group_id", r.GroupID); err != nil {
		return err
	}
	if err := domain.CheckID("user_id", r.UserID); err != nil {
		return err
	}
	if r.RoleLevel != int(domain.RoleAdmin) && r.RoleLevel != int(domain.RoleMember) {
		return domain.BadField("role_level", "must be 60 (admin) or 20 (member); ownership moves with /group/transfer")
	}
	return nil
}

// UpdateRequest is the body of POST /group/update; absent fields stay.
type UpdateRequest struct {
	GroupID      string  `json:"group_id"`
	Name         *string `json:"name"`
	Introduction *string `json:"introduction"`
	Avatar       *string `json:"avatar"`
	JoinPolicy   *string `json:"join_policy"`
	// InvitePermission is "members" or "admins".
	InvitePermission *string `json:"invite_permission"`
}

// Validate requires group_id and at least one field, each within its limits.
func (r *UpdateRequest) Validate() error {
	if err := domain.CheckID("group_id", r.GroupID); err != nil {
		return err
	}
	if r.Name == nil && r.Introduction == nil && r.Avatar == nil && r.JoinPolicy == nil && r.InvitePermission == nil {
		return domain.BadField("body", "must set name, introduction, avatar, join_policy and/or invite_permission")
	}
	for _, f := range []struct {
		name     string
		v        *string
		min, max int
	}{{"name", r.Name, 1, maxNameLen}, {"introduction", r.Introduction, 0, maxIntroductionLen}, {"avatar", r.Avatar, 0, maxAvatarLen}} {
		if f.v != nil {
			if err := domain.CheckLen(f.name, *f.v, f.min, f.max); err != nil {
				return err
			}
		}
	}
	if r.JoinPolicy != nil && (*r.JoinPolicy == "" || checkPolicy("join_policy", *r.JoinPolicy) != nil) {
		return domain.BadField("join_policy", "must be %q, %q or %q", PolicyInviteOnly, PolicyOpen, PolicyApproval)
	}
	if r.InvitePermission != nil && (*r.InvitePermission == "" || checkInvitePermission("invite_permission", *r.InvitePermission) != nil) {
		return domain.BadField("invite_permission", "must be %q or %q", configs.InviteByMembers, configs.InviteByAdmins)
	}
	return nil
}

// InviteResult answers POST /group/invite: the members added (or added
// back) and the users skipped because they already were active members.
type InviteResult struct {
	GroupID string       `json:"group_id"`
	Invited []MemberJSON `json:"invited"`
	Skipped []string     `json:"skipped"`
}

// KickResult answers POST /group/kick: who was kicked and who was skipped
// (not an active member).
type KickResult struct {
	GroupID string   `json:"group_id"`
	Kicked  []string `json:"kicked"`
	Skipped []string `json:"skipped"`
}

// MembersPage answers GET /group/members.
type MembersPage struct {
	Members []MemberJSON `json:"members"`
	Total   int64        `json:"total"`
}

// GroupList answers GET /group/list: a page of the caller's groups and
// the cursor of the next page ("" after the last).
type GroupList struct {
	Groups     []GroupJSON `json:"groups"`
	NextCursor string      `json:"next_cursor"`
}
