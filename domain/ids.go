package domain

import (
	"slices"
	"strings"
)

// SessionType tells single chat from group chat, with OpenIM's numbers.
type SessionType int

const (
	// SessionSingle is a one-to-one conversation ("si_" conversation IDs).
	SessionSingle SessionType = 1
	// SessionGroup is a group conversation ("sg_" conversation IDs).
	SessionGroup SessionType = 3
)

// Valid reports whether t is a session type Nexo serves.
func (t SessionType) Valid() bool { return t == SessionSingle || t == SessionGroup }

const (
	singlePrefix = "si_"
	groupPrefix  = "sg_"
	// MaxIDLen is the longest user or group ID accepted (VARCHAR(64) in the schema).
	MaxIDLen = 64
)

// ValidID reports whether id is 1–64 characters of [A-Za-z0-9_-], the rule
// for user and group IDs.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// SingleConversationID returns "si_{min(a,b)}_{max(a,b)}", the same for both
// parties (docs/conversations.md). A note to self is "si_{a}_{a}".
//
// User IDs may contain '_', which would make "si_a_b_c" ambiguous ("a" with
// "b_c", or "a_b" with "c"), so inside each half '_' is written as '.', a
// character no ID may hold: "a" with "b_c" is "si_a_b.c". IDs without '_'
// get exactly the plain form "si_a_b". See docs/conversations.md.
func SingleConversationID(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return singlePrefix + strings.ReplaceAll(a, "_", ".") + "_" + strings.ReplaceAll(b, "_", ".")
}

// IsSingleConversationID reports whether id is SingleConversationID(a, b),
// without building that string.
func IsSingleConversationID(id, a, b string) bool {
	if b < a {
		a, b = b, a
	}
	rest, ok := strings.CutPrefix(id, singlePrefix)
	if ok {
		rest, ok = cutEscapedID(rest, a)
	}
	if !ok || !strings.HasPrefix(rest, "_") {
		return false
	}
	rest, ok = cutEscapedID(rest[1:], b)
	return ok && rest == ""
}

// cutEscapedID cuts the user ID id, written as in a single-chat
// conversation ID ('_' as '.'), from the front of s.
func cutEscapedID(s, id string) (rest string, ok bool) {
	if len(s) < len(id) {
		return "", false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c == '_' {
			c = '.'
		}
		if s[i] != c {
			return "", false
		}
	}
	return s[len(id):], true
}

// SingleParties returns the two user IDs of a single-chat conversation ID in
// ID order, and false when the ID is not a well-formed single-chat ID.
func SingleParties(conversationID string) (a, b string, ok bool) {
	rest, found := strings.CutPrefix(conversationID, singlePrefix)
	if !found {
		return "", "", false
	}
	x, y, found := strings.Cut(rest, "_")
	if !found {
		return "", "", false
	}
	a, b = strings.ReplaceAll(x, ".", "_"), strings.ReplaceAll(y, ".", "_")
	if !ValidID(a) || !ValidID(b) || SingleConversationID(a, b) != conversationID {
		return "", "", false
	}
	return a, b, true
}

// GroupConversationID returns "sg_{group_id}".
func GroupConversationID(groupID string) string { return groupPrefix + groupID }

// IsGroupConversationID reports whether id is GroupConversationID(groupID),
// without building that string.
func IsGroupConversationID(id, groupID string) bool {
	rest, ok := strings.CutPrefix(id, groupPrefix)
	return ok && rest == groupID
}

// ConversationSessionType tells which kind of conversation an ID names, from
// its prefix; ok is false for anything else.
func ConversationSessionType(conversationID string) (t SessionType, ok bool) {
	switch {
	case strings.HasPrefix(conversationID, singlePrefix):
		return SessionSingle, true
	case strings.HasPrefix(conversationID, groupPrefix):
		return SessionGroup, true
	}
	return 0, false
}

// GroupIDOf returns the group ID of a group conversation ID, or "" when the ID
// is not a well-formed group conversation.
func GroupIDOf(conversationID string) string {
	id, ok := strings.CutPrefix(conversationID, groupPrefix)
	if !ok || !ValidID(id) {
		return ""
	}
	return id
}

// SinglePeer returns the other party of a single-chat conversation for
// userID, and false when userID is not a party. For a note to self the peer
// is userID itself.
func SinglePeer(conversationID, userID string) (string, bool) {
	a, b, ok := SingleParties(conversationID)
	switch {
	case !ok:
		return "", false
	case a == userID:
		return b, true
	case b == userID:
		return a, true
	}
	return "", false
}

// Platform is a client platform, numbered as OpenIM numbers them.
type Platform int

// OpenIM's platform numbers.
const (
	PlatformIOS        Platform = 1
	PlatformAndroid    Platform = 2
	PlatformWindows    Platform = 3
	PlatformOSX        Platform = 4
	PlatformWeb        Platform = 5
	PlatformMiniWeb    Platform = 6
	PlatformLinux      Platform = 7
	PlatformAndroidPad Platform = 8
	PlatformIPad       Platform = 9
	PlatformAdmin      Platform = 10
)

// Valid reports whether p is one of OpenIM's platform numbers (1–10).
func (p Platform) Valid() bool { return p >= PlatformIOS && p <= PlatformAdmin }

// reservedUserIDs are user IDs nobody may register, compared without
// letter case: "all" is the @all keyword of at_user_ids, the others are
// names a client or an operator could mistake for the server or everyone.
var reservedUserIDs = map[string]bool{
	"all": true, "everyone": true, "here": true, "channel": true,
	"system": true, "sys": true, "admin": true, "administrator": true, "root": true,
	"nexo": true, "server": true, "bot": true, "null": true, "undefined": true, "me": true,
}

// IsReservedUserID reports whether id is reserved (ReservedUserIDs), in any
// letter case.
func IsReservedUserID(id string) bool { return reservedUserIDs[NormalizeUserID(id)] }

// ReservedUserIDs returns the reserved user IDs (lower case, sorted), for
// documentation and tests.
func ReservedUserIDs() []string {
	out := make([]string, 0, len(reservedUserIDs))
	for id := range reservedUserIDs {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// NormalizeUserID is the form user IDs are unique on: lower case. IDs are
// stored and shown as registered ("Alice"), but "alice" cannot register
// beside it.
func NormalizeUserID(id string) string { return strings.ToLower(id) }
