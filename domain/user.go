package domain

// User is a registered account. Times are Unix milliseconds.
type User struct {
	ID           string
	Nickname     string
	Avatar       string
	PasswordHash string
	// Disabled users cannot log in or get tokens (server API).
	Disabled bool
	// GroupInvites is whom the user lets add them to groups; "" is
	// InvitesEveryone.
	GroupInvites GroupInvites
	// DMPolicy is whom the user accepts single-chat messages from; "" is
	// DMEveryone.
	DMPolicy  DMPolicy
	CreatedAt int64
	UpdatedAt int64
}

// Field limits shared by validation and the schema.
const (
	MaxNicknameLen = 128
	MaxAvatarLen   = 512
	MinPasswordLen = 8
	MaxPasswordLen = 128
)

// GroupInvites is a user's choice of who may add them to a group (create
// with them as a member, or invite them): the profile field group_invites.
type GroupInvites string

// The group_invites choices.
const (
	// InvitesEveryone: anyone may add the user (the default).
	InvitesEveryone GroupInvites = "everyone"
	// InvitesSharedGroups: only users who are active members of a group
	// the user is an active member of.
	InvitesSharedGroups GroupInvites = "shared_groups"
	// InvitesNobody: nobody may add the user; they join by themselves.
	InvitesNobody GroupInvites = "nobody"
)

// Valid reports whether g is one of the choices.
func (g GroupInvites) Valid() bool {
	return g == InvitesEveryone || g == InvitesSharedGroups || g == InvitesNobody
}

// OrDefault is g, or InvitesEveryone when g is unset.
func (g GroupInvites) OrDefault() GroupInvites {
	if g == "" {
		return InvitesEveryone
	}
	return g
}

// DMPolicy is a user's choice of who may send them single-chat messages
// and typing indicators: the profile field dm_policy.
type DMPolicy string

// The dm_policy choices.
const (
	// DMEveryone: anyone may write to the user (the default).
	DMEveryone DMPolicy = "everyone"
	// DMSharedGroups: only users who are active members of a group the
	// user is an active member of.
	DMSharedGroups DMPolicy = "shared_groups"
	// DMNobody: nobody may write to the user in a single chat.
	DMNobody DMPolicy = "nobody"
)

// Valid reports whether p is one of the choices.
func (p DMPolicy) Valid() bool {
	return p == DMEveryone || p == DMSharedGroups || p == DMNobody
}

// OrDefault is p, or DMEveryone when p is unset.
func (p DMPolicy) OrDefault() DMPolicy {
	if p == "" {
		return DMEveryone
	}
	return p
}

// MaxBlocks is how many users one user may block.
const MaxBlocks = 1000

// Block is one user blocked by another, and when (Unix ms).
type Block struct {
	UserID    string
	CreatedAt int64
}
