package domain

// User is a registered account. Times are Unix milliseconds.
type User struct {
	ID           string
	Nickname     string
	Avatar       string
	PasswordHash string
	// Disabled users cannot log in or get tokens (server API).
	Disabled  bool
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
