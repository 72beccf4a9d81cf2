// Package presence answers who is online (GET /user/presence and the
// server API's /api/presence), keeps this instance's connections in the
// shared presence record (platforms, background state, last_seen; the
// record routing reads too) and turns first-connect / last-disconnect into
// user_online / user_offline events, and relays typing indicators (WS 1103
// → push 2103) to a conversation's online members. Nothing here is stored
// as a message: typing has no seq.
package presence

import (
	"context"
	"strings"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// Store is the shared presence record (store.Presence): Connect and
// Disconnect report a user's first connection and last disconnect across
// every instance; Refresh rewrites this instance's entries and renews their
// TTL.
type Store interface {
	Connect(ctx context.Context, userID, connID string, platformID int) (first bool, err error)
	SetBackground(ctx context.Context, userID, connID string, platformID int, background bool) error
	Refresh(ctx context.Context, sessions []store.Session) error
	Disconnect(ctx context.Context, userID, connID string) (last bool, err error)
	Lookup(ctx context.Context, userIDs []string) ([]store.UserPresence, error)
}

// Contacts tells which users share a conversation with a user
// (store.Contacts): only those may see each other's presence.
type Contacts interface {
	Shared(ctx context.Context, userID string, ids []string) (map[string]bool, error)
}

// Events receives user_online / user_offline (the webhook emitter); nil
// sends none.
type Events interface {
	UserOnline(ctx context.Context, userID string, platformID int)
	UserOffline(ctx context.Context, userID string, platformID int)
}

// JSON is one user's presence on the wire.
type JSON struct {
	UserID string `json:"user_id"`
	Online bool   `json:"online"`
	// Platforms are the platform ids of live connections.
	Platforms []int `json:"platforms"`
	// LastSeen is the Unix ms of the last disconnect; 0 if unknown.
	LastSeen int64 `json:"last_seen"`
}

// ListJSON answers a lookup.
type ListJSON struct {
	Presence []JSON `json:"presence"`
}

// MaxLookup caps user_ids of one lookup.
const MaxLookup = 100

// Service looks presence up.
type Service struct {
	store    Store
	contacts Contacts
}

// NewService returns the presence service.
func NewService(st Store, contacts Contacts) *Service {
	return &Service{store: st, contacts: contacts}
}

// Lookup returns the presence of userIDs (in order), unfiltered: the
// server API's view.
func (s *Service) Lookup(ctx context.Context, userIDs []string) ([]JSON, error) {
	ps, err := s.store.Lookup(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	out := make([]JSON, len(ps))
	for i, p := range ps {
		out[i] = JSON{UserID: p.UserID, Online: p.Online, Platforms: p.Platforms, LastSeen: p.LastSeen}
		if out[i].Platforms == nil {
			out[i].Platforms = []int{}
		}
	}
	return out, nil
}

// LookupAs is Lookup as caller may see it: users who share no
// conversation with the caller (and are not the caller) are left out.
func (s *Service) LookupAs(ctx context.Context, caller string, userIDs []string) ([]JSON, error) {
	shared, err := s.contacts.Shared(ctx, caller, userIDs)
	if err != nil {
		return nil, err
	}
	visible := make([]string, 0, len(userIDs))
	for _, id := range userIDs {
		if id == caller || shared[id] {
			visible = append(visible, id)
		}
	}
	return s.Lookup(ctx, visible)
}

// ParseIDs reads user_ids=a,b,c (comma-separated, repeated parameters
// allowed): 1..MaxLookup distinct well-formed IDs.
func ParseIDs(raw []string) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	for _, r := range raw {
		for _, id := range strings.Split(r, ",") {
			id = strings.TrimSpace(id)
			if id == "" || seen[id] {
				continue
			}
			if !domain.ValidID(id) {
				return nil, domain.BadField("user_ids", "%q is not a user ID", id)
			}
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || len(ids) > MaxLookup {
		return nil, domain.BadField("user_ids", "must list 1–%d user IDs (comma-separated)", MaxLookup)
	}
	return ids, nil
}
