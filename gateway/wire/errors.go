// Package wire holds what Nexo puts on the wire, in one place: the error
// table (reason, err_code, HTTP status) that maps every domain error, the
// HTTP response envelope, and the WebSocket frame types and identifiers.
// docs/errors.md and docs/protocol.md describe the same tables.
package wire

import (
	"errors"
	"time"

	"github.com/nexo-im/nexo/domain"
)

// Reason is a machine-readable error string, stable public API.
type Reason string

// Every error reason Nexo answers with.
const (
	ReasonBadRequest            Reason = "bad_request"
	ReasonBodyTooLong           Reason = "body_too_long"
	ReasonUnknownRequest        Reason = "unknown_request"
	ReasonBadSeq                Reason = "bad_seq"
	ReasonUnsupportedMediaType  Reason = "unsupported_media_type"
	ReasonTokenMissing          Reason = "token_missing"
	ReasonTokenInvalid          Reason = "token_invalid"
	ReasonTokenExpired          Reason = "token_expired"
	ReasonTokenRevoked          Reason = "token_revoked"
	ReasonBadCredentials        Reason = "bad_credentials"
	ReasonUnauthorized          Reason = "unauthorized"
	ReasonSessionInvalid        Reason = "session_invalid"
	ReasonKicked                Reason = "kicked"
	ReasonForbidden             Reason = "forbidden"
	ReasonNotConversationMember Reason = "not_conversation_member"
	ReasonNotGroupMember        Reason = "not_group_member"
	ReasonMemberNotActive       Reason = "member_not_active"
	ReasonGroupDismissed        Reason = "group_dismissed"
	ReasonJoinNotAllowed        Reason = "join_not_allowed"
	ReasonOwnerCannotQuit       Reason = "owner_cannot_quit"
	ReasonRevokeNotAllowed      Reason = "revoke_not_allowed"
	ReasonRevokeTimeout         Reason = "revoke_timeout"
	ReasonNotFound              Reason = "not_found"
	ReasonUserNotFound          Reason = "user_not_found"
	ReasonGroupNotFound         Reason = "group_not_found"
	ReasonMessageNotFound       Reason = "message_not_found"
	ReasonUserExists            Reason = "user_exists"
	ReasonTooManyRequests       Reason = "too_many_requests"
	ReasonInternalError         Reason = "internal_error"
	ReasonServerBusy            Reason = "server_busy"
	ReasonSaveFailed            Reason = "save_failed"
	ReasonSearchTimeout         Reason = "search_timeout"
	ReasonUserDisabled          Reason = "user_disabled"
	ReasonMessageRejected       Reason = "message_rejected"
	ReasonBlocked               Reason = "blocked"
	ReasonBlockedWord           Reason = "blocked_word"
	ReasonReportNotFound        Reason = "report_not_found"

	// Message actions (docs/actions.md).
	ReasonBadEmoji                Reason = "bad_emoji"
	ReasonEditNotAllowed          Reason = "edit_not_allowed"
	ReasonEditTimeout             Reason = "edit_timeout"
	ReasonDeleteNotAllowed        Reason = "delete_not_allowed"
	ReasonQuoteUnavailable        Reason = "quote_unavailable"
	ReasonTooManyReactions        Reason = "too_many_reactions"
	ReasonMessageGone             Reason = "message_gone"
	ReasonPushEndpointInsecure    Reason = "push_endpoint_insecure"
	ReasonPushSubscriptionInvalid Reason = "push_subscription_invalid"
	ReasonPushTokenInvalid        Reason = "push_token_invalid"
	ReasonPushProviderUnavailable Reason = "push_provider_unavailable"
	ReasonPushDeviceNotFound      Reason = "push_device_not_found"

	// Objects (docs/media.md).
	ReasonObjectTypeMismatch Reason = "object_type_mismatch"
	ReasonObjectTypeRefused  Reason = "object_type_refused"
	ReasonImageTooLarge      Reason = "image_too_large"
	ReasonObjectNameInvalid  Reason = "object_name_invalid"
	ReasonObjectAccessDenied Reason = "object_access_denied"
	ReasonObjectURLInvalid   Reason = "object_url_invalid"
	ReasonObjectURLExpired   Reason = "object_url_expired"
	ReasonObjectNotFound     Reason = "object_not_found"
	ReasonUploadNotFound     Reason = "upload_not_found"
	ReasonObjectTooLarge     Reason = "object_too_large"
	ReasonQuotaExceeded      Reason = "quota_exceeded"
	ReasonObjectIncomplete   Reason = "object_incomplete"
	ReasonPartsMismatch      Reason = "parts_mismatch"
)

// Code is one row of the error table.
type Code struct {
	Reason     Reason
	ErrCode    int
	HTTPStatus int
}

// table is the single error table; docs/errors.md mirrors it.
var table = []Code{
	{ReasonBadRequest, 1001, 400},
	{ReasonBodyTooLong, 1002, 400},
	{ReasonUnknownRequest, 1003, 400},
	{ReasonBadSeq, 1004, 400},
	{ReasonPushEndpointInsecure, 1030, 400},
	{ReasonPushSubscriptionInvalid, 1031, 400},
	{ReasonPushTokenInvalid, 1032, 400},
	{ReasonPushProviderUnavailable, 1033, 400},
	{ReasonUnsupportedMediaType, 1005, 415},
	{ReasonBadEmoji, 1020, 400},
	{ReasonObjectTypeMismatch, 1010, 400},
	{ReasonObjectTypeRefused, 1011, 400},
	{ReasonImageTooLarge, 1012, 400},
	{ReasonObjectNameInvalid, 1013, 400},
	{ReasonTokenMissing, 1101, 401},
	{ReasonTokenInvalid, 1102, 401},
	{ReasonTokenExpired, 1103, 401},
	{ReasonTokenRevoked, 1104, 401},
	{ReasonBadCredentials, 1105, 401},
	{ReasonUnauthorized, 1106, 401},
	{ReasonSessionInvalid, 1107, 401},
	{ReasonKicked, 1108, 401},
	{ReasonForbidden, 1201, 403},
	{ReasonNotConversationMember, 1202, 403},
	{ReasonNotGroupMember, 1203, 403},
	{ReasonMemberNotActive, 1204, 403},
	{ReasonGroupDismissed, 1205, 403},
	{ReasonJoinNotAllowed, 1206, 403},
	{ReasonOwnerCannotQuit, 1207, 403},
	{ReasonRevokeNotAllowed, 1208, 403},
	{ReasonRevokeTimeout, 1209, 403},
	{ReasonUserDisabled, 1220, 403},
	{ReasonMessageRejected, 1221, 403},
	{ReasonBlocked, 1222, 403},
	{ReasonBlockedWord, 1260, 403},
	{ReasonEditNotAllowed, 1240, 403},
	{ReasonEditTimeout, 1241, 403},
	{ReasonDeleteNotAllowed, 1242, 403},
	{ReasonObjectAccessDenied, 1230, 403},
	{ReasonObjectURLInvalid, 1231, 403},
	{ReasonObjectURLExpired, 1232, 403},
	{ReasonNotFound, 1300, 404},
	{ReasonUserNotFound, 1301, 404},
	{ReasonGroupNotFound, 1302, 404},
	{ReasonMessageNotFound, 1303, 404},
	{ReasonReportNotFound, 1340, 404},
	{ReasonQuoteUnavailable, 1320, 404},
	{ReasonPushDeviceNotFound, 1330, 404},
	{ReasonUserExists, 1401, 409},
	{ReasonTooManyReactions, 1430, 409},
	{ReasonMessageGone, 1431, 409},
	{ReasonObjectNotFound, 1310, 404},
	{ReasonUploadNotFound, 1311, 404},
	{ReasonObjectTooLarge, 1410, 413},
	{ReasonQuotaExceeded, 1411, 413},
	{ReasonObjectIncomplete, 1412, 409},
	{ReasonPartsMismatch, 1413, 409},
	{ReasonTooManyRequests, 1429, 429},
	{ReasonInternalError, 1500, 500},
	{ReasonServerBusy, 1503, 503},
	{ReasonSaveFailed, 1504, 500},
	{ReasonSearchTimeout, 1505, 504},
}

var byReason = func() map[Reason]Code {
	m := make(map[Reason]Code, len(table))
	for _, c := range table {
		m[c.Reason] = c
	}
	return m
}()

// Table returns a copy of the error table, in err_code order.
func Table() []Code { return append([]Code(nil), table...) }

// Lookup returns the row of a reason; an unknown reason is internal_error.
func Lookup(r Reason) Code {
	if c, ok := byReason[r]; ok {
		return c
	}
	return byReason[ReasonInternalError]
}

// domainReasons maps each domain sentinel to its reason.
var domainReasons = []struct {
	err    error
	reason Reason
}{
	{domain.ErrBodyTooLong, ReasonBodyTooLong},
	{domain.ErrInvalidArgument, ReasonBadRequest},
	{domain.ErrBadSeq, ReasonBadSeq},
	{domain.ErrTokenMissing, ReasonTokenMissing},
	{domain.ErrTokenInvalid, ReasonTokenInvalid},
	{domain.ErrTokenExpired, ReasonTokenExpired},
	{domain.ErrTokenRevoked, ReasonTokenRevoked},
	{domain.ErrBadCredentials, ReasonBadCredentials},
	{domain.ErrForbidden, ReasonForbidden},
	{domain.ErrUserDisabled, ReasonUserDisabled},
	{domain.ErrMessageRejected, ReasonMessageRejected},
	{domain.ErrBlocked, ReasonBlocked},
	{domain.ErrBlockedWord, ReasonBlockedWord},
	{domain.ErrReportNotFound, ReasonReportNotFound},
	{domain.ErrNotConversationMember, ReasonNotConversationMember},
	{domain.ErrNotGroupMember, ReasonNotGroupMember},
	{domain.ErrMemberNotActive, ReasonMemberNotActive},
	{domain.ErrGroupDismissed, ReasonGroupDismissed},
	{domain.ErrJoinNotAllowed, ReasonJoinNotAllowed},
	{domain.ErrOwnerCannotQuit, ReasonOwnerCannotQuit},
	{domain.ErrRevokeNotAllowed, ReasonRevokeNotAllowed},
	{domain.ErrRevokeTimeout, ReasonRevokeTimeout},
	{domain.ErrUserNotFound, ReasonUserNotFound},
	{domain.ErrGroupNotFound, ReasonGroupNotFound},
	{domain.ErrMessageNotFound, ReasonMessageNotFound},
	{domain.ErrNotFound, ReasonNotFound},
	{domain.ErrUserExists, ReasonUserExists},
	{domain.ErrRateLimited, ReasonTooManyRequests},
	{domain.ErrServerBusy, ReasonServerBusy},
	{domain.ErrSaveFailed, ReasonSaveFailed},
	{domain.ErrSearchTimeout, ReasonSearchTimeout},
	{domain.ErrBadEmoji, ReasonBadEmoji},
	{domain.ErrEditNotAllowed, ReasonEditNotAllowed},
	{domain.ErrEditTimeout, ReasonEditTimeout},
	{domain.ErrDeleteNotAllowed, ReasonDeleteNotAllowed},
	{domain.ErrQuoteUnavailable, ReasonQuoteUnavailable},
	{domain.ErrTooManyReactions, ReasonTooManyReactions},
	{domain.ErrMessageGone, ReasonMessageGone},
	{domain.ErrPushEndpointInsecure, ReasonPushEndpointInsecure},
	{domain.ErrPushSubscriptionInvalid, ReasonPushSubscriptionInvalid},
	{domain.ErrPushTokenInvalid, ReasonPushTokenInvalid},
	{domain.ErrPushProviderUnavailable, ReasonPushProviderUnavailable},
	{domain.ErrPushDeviceNotFound, ReasonPushDeviceNotFound},
	{domain.ErrObjectTypeMismatch, ReasonObjectTypeMismatch},
	{domain.ErrObjectTypeRefused, ReasonObjectTypeRefused},
	{domain.ErrImageTooLarge, ReasonImageTooLarge},
	{domain.ErrObjectNameInvalid, ReasonObjectNameInvalid},
	{domain.ErrObjectAccessDenied, ReasonObjectAccessDenied},
	{domain.ErrURLInvalid, ReasonObjectURLInvalid},
	{domain.ErrURLExpired, ReasonObjectURLExpired},
	{domain.ErrObjectNotFound, ReasonObjectNotFound},
	{domain.ErrUploadNotFound, ReasonUploadNotFound},
	{domain.ErrObjectTooLarge, ReasonObjectTooLarge},
	{domain.ErrQuotaExceeded, ReasonQuotaExceeded},
	{domain.ErrObjectIncomplete, ReasonObjectIncomplete},
	{domain.ErrPartsMismatch, ReasonPartsMismatch},
}

// Error is a wire error: a row of the table plus a human detail.
// RetryAfter, when > 0 (too_many_requests), says when a retry may succeed:
// it becomes the HTTP Retry-After header and data.retry_after_ms.
// RequestID, when set, is sent as data.request_id (the id under which the
// server logged the cause of a 5xx).
type Error struct {
	Code
	Detail     string
	RetryAfter time.Duration
	RequestID  string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return string(e.Reason)
	}
	return string(e.Reason) + ": " + e.Detail
}

// NewError builds a wire error for reason with a human detail.
func NewError(r Reason, detail string) *Error { return &Error{Code: Lookup(r), Detail: detail} }

// FromError maps any error to its wire error; it is Public without the
// hidden flag.
func FromError(err error) *Error {
	we, _ := Public(err)
	return we
}

// Public is the one place that decides what of an error a client sees, on
// both transports: a *Error passes through as its author wrote it, and so
// does a *domain.Error (its Kind's row, its Detail and RetryAfter); a
// domain sentinel (wrapped or joined) gets its row with the error text as
// detail, except for server-side rows (5xx), whose text may hold internal
// detail (addresses, driver messages) and is dropped; anything else is
// internal_error with no detail. hidden reports that a server-side cause
// was dropped: the caller logs err with a request id and sends that id
// (Error.RequestID) so the two can be matched.
func Public(err error) (we *Error, hidden bool) {
	if errors.As(err, &we) {
		return we, false
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return &Error{Code: Lookup(reasonOf(de.Kind)), Detail: de.Detail, RetryAfter: de.RetryAfter}, false
	}
	for _, d := range domainReasons {
		if errors.Is(err, d.err) {
			c := Lookup(d.reason)
			if c.HTTPStatus >= 500 {
				return &Error{Code: c}, true
			}
			return &Error{Code: c, Detail: err.Error()}, false
		}
	}
	return &Error{Code: Lookup(ReasonInternalError)}, true
}

// reasonOf is the reason of a domain sentinel; anything else is
// internal_error.
func reasonOf(kind error) Reason {
	for _, d := range domainReasons {
		if errors.Is(kind, d.err) {
			return d.reason
		}
	}
	return ReasonInternalError
}

// WithRequestID returns a copy of e carrying request id id.
func (e *Error) WithRequestID(id string) *Error {
	c := *e
	c.RequestID = id
	return &c
}
