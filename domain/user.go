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

// Audience is a user's choice of who may reach them one way: everyone,
// only users who share a group with them, or nobody. The profile fields
// group_invites (GroupInvites) and dm_policy (DMPolicy) take these values.
type Audience string

// The audience choices.
const (
	// AudienceEveryone: anyone (the default).
	AudienceEveryone Audience = "everyone"
	// AudienceSharedGroups: only users who are active members of a group
	// the user is an active member of.
	AudienceSharedGroups Audience = "shared_groups"
	// AudienceNobody: nobody.
	AudienceNobody Audience = "nobody"
)

// Valid reports whether a is one of the choices.
func (a Audience) Valid() bool {
	return a == AudienceEveryone || a == AudienceSharedGroups || a == AudienceNobody
}

// OrDefault is a, or AudienceEveryone when a is unset.
func (a Audience) OrDefault() Audience {
	if a == "" {
		return AudienceEveryone
	}
	return a
}

// GroupInvites is who may add the user to a group (create with them as a
// member, or invite them); nobody means they join by themselves.
type GroupInvites = Audience

// The group_invites choices.
const (
	InvitesEveryone     = AudienceEveryone
	InvitesSharedGroups = AudienceSharedGroups
	InvitesNobody       = AudienceNobody
)

// DMPolicy is who may send the user single-chat messages and typing
// indicators.
type DMPolicy = Audience

// The dm_policy choices.
const (
	DMEveryone     = AudienceEveryone
	DMSharedGroups = AudienceSharedGroups
	DMNobody       = AudienceNobody
)

// MaxBlocks is how many users one user may block.
const MaxBlocks = 1000

// Block is one user blocked by another, and when (Unix ms).
type Block struct {
	UserID    string
	CreatedAt int64
}
