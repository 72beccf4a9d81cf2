package domain

// RoleLevel is a group member's role, with OpenIM's levels.
type RoleLevel int

// Roles.
const (
	RoleOwner  RoleLevel = 100
	RoleAdmin  RoleLevel = 60
	RoleMember RoleLevel = 20
)

// MemberStatus is whether a member is in the group (docs/groups.md).
type MemberStatus int

// Member statuses.
const (
	MemberNormal MemberStatus = 0
	MemberLeft   MemberStatus = 1
	MemberKicked MemberStatus = 2
	// MemberBanned: removed, and refused re-joining and invitations until
	// unbanned (docs/moderation.md).
	MemberBanned MemberStatus = 3
)

// GroupStatus is whether a group accepts messages.
type GroupStatus int

// Group statuses.
const (
	GroupNormal    GroupStatus = 0
	GroupDismissed GroupStatus = 1
)

// Group is a group chat. Times are Unix milliseconds.
type Group struct {
	ID            string
	Name          string
	Introduction  string
	Avatar        string
	Status        GroupStatus
	CreatorUserID string
	OwnerUserID   string
	GroupType     int
	JoinPolicy    string
	// InvitePermission is who may add others: "members", "admins", or ""
	// for the server's group.invite_permission.
	InvitePermission string
	// Muted: only the owner and admins may send (docs/moderation.md).
	Muted     bool
	CreatedAt int64
	UpdatedAt int64
}

// GroupMember is one user's membership. JoinSeq is the first seq the member
// may see (joining does not reveal history; see docs/groups.md).
type GroupMember struct {
	GroupID       string
	UserID        string
	RoleLevel     RoleLevel
	Status        MemberStatus
	JoinSeq       int64
	JoinedAt      int64
	InviterUserID string
	// MuteUntil is when the member's mute ends (Unix ms); 0 = not muted.
	MuteUntil int64
}

// ApplicationStatus is where a join application of an approval group
// stands (OpenIM's handle_result: 0 pending, 1 accepted, -1 rejected).
type ApplicationStatus int

// Application statuses.
const (
	ApplicationPending  ApplicationStatus = 0
	ApplicationAccepted ApplicationStatus = 1
	ApplicationRejected ApplicationStatus = -1
)

// GroupApplication is a user's request to join a group whose join policy
// is approval; the owner or an admin accepts or rejects it. Times are Unix
// milliseconds; HandledAt is 0 while pending.
type GroupApplication struct {
	ID            int64
	GroupID       string
	UserID        string
	ReqMsg        string
	Status        ApplicationStatus
	HandlerUserID string
	CreatedAt     int64
	HandledAt     int64
}
