package privacy

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/store"
)

// DeleteRequest is the body of POST /user/delete: the account's password,
// asked again so that a stolen session alone cannot delete the account.
type DeleteRequest struct {
	Password string `json:"password"`
}

// Validate requires a password of a possible length.
func (r *DeleteRequest) Validate() error {
	return domain.CheckLen("password", r.Password, 1, domain.MaxPasswordLen)
}

// DeletedJSON answers a deletion: what became of the user's groups and
// whether their messages were erased.
type DeletedJSON struct {
	UserID         string            `json:"user_id"`
	Transferred    map[string]string `json:"transferred_groups"`
	Dismissed      []string          `json:"dismissed_groups"`
	Quit           []string          `json:"quit_groups"`
	MessagesErased bool              `json:"messages_erased"`
}

// DeleteOwn deletes the caller's account after checking password (else
// domain.ErrBadCredentials; an account without a password — created by
// the app's backend — is forbidden: the app deletes it through the server
// API). The check counts against the login limits of the client at ip and
// the account (too_many_requests while they back off), so a stolen token
// cannot guess the password faster than a login could. See Delete for what
// deletion does.
func (s *Service) DeleteOwn(ctx context.Context, ip, userID string, req DeleteRequest) (DeletedJSON, error) {
	u, err := s.d.Users.Get(ctx, userID)
	if err != nil {
		return DeletedJSON{}, err
	}
	if u.PasswordHash == "" {
		return DeletedJSON{}, domain.NewError(domain.ErrForbidden, "this account has no password: the app's backend deletes it (POST /api/user/delete)")
	}
	if s.d.Attempts != nil {
		if err := s.d.Attempts.AllowLogin(ctx, ip, userID); err != nil {
			return DeletedJSON{}, err
		}
	}
	if err := s.d.Passwords.Check(u.PasswordHash, req.Password); err != nil {
		if errors.Is(err, domain.ErrBadCredentials) && s.d.Attempts != nil {
			s.d.Attempts.LoginFailed(ctx, ip, userID)
		}
		return DeletedJSON{}, err
	}
	return s.Delete(ctx, userID)
}

// Delete deletes userID's account (the server API's POST /api/user/delete,
// and DeleteOwn after its password check), in this order:
//
//  1. every token is refused on every instance at once and for good (the
//     token store disables the user; nothing can sign in again), and every
//     live session is closed on every instance;
//  2. the user leaves every group through the group service: an owned
//     group goes to its longest-serving admin, or is dismissed without
//     one; the members get the usual notifications;
//  3. push devices are removed (Devices), and the objects of the user
//     that no message carries — avatars, uploads never sent — with their
//     bytes (Objects);
//  4. the database forgets the profile, conversations, cursors, blocks,
//     applications and group profile fields, and — with
//     retention.erase_deleted_users — the messages the user sent; the
//     user_id is reserved (deleted_users) so nobody registers it again;
//  5. the user's Redis state (presence, last seen, resend marks) is
//     deleted.
//
// A step that fails stops the deletion with its error; calling Delete
// again resumes it (each step is idempotent, and a reserved ID whose row
// is gone still finishes). An unknown user is domain.ErrUserNotFound.
func (s *Service) Delete(ctx context.Context, userID string) (DeletedJSON, error) {
	out := DeletedJSON{UserID: userID, Transferred: map[string]string{}, Dismissed: []string{}, Quit: []string{}}
	if _, err := s.d.Users.Get(ctx, userID); err != nil {
		if !errors.Is(err, domain.ErrUserNotFound) {
			return out, err
		}
		// A deletion cut short after the row went: finish it; an ID that
		// was never deleted is unknown.
		if ok, rerr := s.d.Store.Reserved(ctx, userID); rerr != nil || !ok {
			return out, err
		}
	}
	if err := s.d.Tokens.SetDisabled(ctx, userID, true); err != nil {
		return out, fmt.Errorf("%w: refuse the tokens of %s: %v", domain.ErrServerBusy, userID, err)
	}
	s.d.Sessions.Disconnect(userID, 0, "")
	left, err := s.d.Groups.LeaveAll(ctx, userID)
	out.Transferred, out.Dismissed, out.Quit = left.Transferred, left.Dismissed, left.Quit
	if err != nil {
		return out, err
	}
	if s.d.Devices != nil {
		if err := s.d.Devices.RemoveUserDevices(ctx, userID); err != nil {
			return out, fmt.Errorf("remove the push devices of %s: %w", userID, err)
		}
	}
	if s.d.Objects != nil {
		if _, err := s.d.Objects.EraseOwner(ctx, userID); err != nil {
			return out, fmt.Errorf("erase the objects of %s: %w", userID, err)
		}
	}
	opt := store.EraseOptions{Messages: s.d.Config.EraseDeletedUsers}
	if err := s.d.Store.EraseUser(ctx, userID, opt); err != nil {
		return out, err
	}
	out.MessagesErased = opt.Messages
	if s.d.Keys != nil {
		if err := s.d.Keys.EraseUserKeys(ctx, userID); err != nil {
			return out, fmt.Errorf("%w: erase the Redis state of %s: %v", domain.ErrServerBusy, userID, err)
		}
	}
	if s.d.Gate != nil {
		s.d.Gate.Forget(userID)
	}
	s.d.Log.Info("audit", "point", "account_deleted", "user_id", userID, "messages_erased", opt.Messages,
		"groups_transferred", len(out.Transferred), "groups_dismissed", len(out.Dismissed), "groups_quit", len(out.Quit))
	return out, nil
}
