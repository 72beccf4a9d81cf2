package moderation

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/domain"
	"github.com/nexo-im/nexo/services/chat"
)

// Visibility gives a user's visible seqs in a conversation, the rule of
// pulls (chat.Puller.Bounds): domain.ErrNotConversationMember for a
// conversation the user was never part of, ErrInvalidArgument for a
// malformed conversation_id.
type Visibility interface {
	Bounds(ctx context.Context, userID, conversationID string) (minSeq, maxSeq int64, err error)
}

// Messages reads stored messages (store.MessageRepo).
type Messages interface {
	BySeqs(ctx context.Context, conversationID string, seqs []int64) ([]domain.Message, error)
}

// Store keeps reports (store.ReportRepo).
type Store interface {
	// Create stores rep open, or returns the reporter's earlier report of
	// the same message and true.
	Create(ctx context.Context, rep domain.Report) (domain.Report, bool, error)
	List(ctx context.Context, status domain.ReportStatus, after string, limit int) ([]domain.Report, error)
	// Resolve resolves an open report; a resolved one is returned as is.
	Resolve(ctx context.Context, id, by, resolution string, now int64) (domain.Report, error)
}

// Events appends webhook events with the ID given
// (webhook.Emitter.EmitWithID; nothing for an event not enabled).
type Events interface {
	EmitWithID(ctx context.Context, event, id string, data any) error
}

// Limit counts one user's reports on every instance (limits.Reports):
// nil, or too_many_requests with a retry-after.
type Limit interface {
	AllowReport(ctx context.Context, userID string) error
}

// Page sizes of GET /api/reports.
const (
	DefaultReportPage = 50
	MaxReportPage     = 100
)

// ReportRequest is the body of POST /msg/report and the data of WS 1113.
type ReportRequest struct {
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
	Reason         string `json:"reason"`
}

// Validate: conversation_id required, seq >= 1, reason 1–500 characters.
func (r *ReportRequest) Validate() error {
	if r.ConversationID == "" {
		return domain.BadField("conversation_id", "required")
	}
	if r.Seq < 1 {
		return domain.BadField("seq", "must be >= 1")
	}
	return domain.CheckLen("reason", r.Reason, 1, domain.MaxReportReasonLen)
}

// FiledJSON answers a report: duplicate is true when the caller had
// already reported this message (the earlier report is answered, its
// reason unchanged).
type FiledJSON struct {
	ReportID  string `json:"report_id"`
	Status    string `json:"status"`
	CreatedAt int64  `json:"created_at"`
	Duplicate bool   `json:"duplicate"`
}

// ReportJSON is a report on the server API and in the message_reported
// event: the message is as it was when reported (chat.MessageJSON; a
// revoked one has no content).
type ReportJSON struct {
	ReportID       string           `json:"report_id"`
	ReporterID     string           `json:"reporter_id"`
	ConversationID string           `json:"conversation_id"`
	Seq            int64            `json:"seq"`
	Reason         string           `json:"reason"`
	Status         string           `json:"status"`
	CreatedAt      int64            `json:"created_at"`
	ResolvedAt     int64            `json:"resolved_at,omitempty"`
	ResolvedBy     string           `json:"resolved_by,omitempty"`
	Resolution     string           `json:"resolution,omitempty"`
	Message        chat.MessageJSON `json:"message"`
}

// ReportOf renders r for the wire.
func ReportOf(r domain.Report) ReportJSON {
	return ReportJSON{ReportID: r.ID, ReporterID: r.ReporterID, ConversationID: r.ConversationID, Seq: r.Seq,
		Reason: r.Reason, Status: string(r.Status), CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt,
		ResolvedBy: r.ResolvedBy, Resolution: r.Resolution, Message: chat.ToJSON(&r.Message)}
}

// ListRequest is the query of GET /api/reports.
type ListRequest struct {
	Status string // open, resolved, or "" for both
	Cursor string // next_cursor of the previous page; "" from the first
	Limit  int    // 1–100; 0 is DefaultReportPage
}

// ListJSON is a page of reports in filing order; next_cursor, when not
// empty, asks for the next page.
type ListJSON struct {
	Reports    []ReportJSON `json:"reports"`
	NextCursor string       `json:"next_cursor"`
}

// ResolveRequest is the body of POST /api/reports/{id}/resolve.
type ResolveRequest struct {
	// OpUserID names who resolved it (the app's own user, optional).
	OpUserID string `json:"op_user_id"`
	// Resolution is a note of what was done (optional, up to 500 characters).
	Resolution string `json:"resolution"`
}

// Validate checks the optional fields.
func (r *ResolveRequest) Validate() error {
	if r.OpUserID != "" {
		if err := domain.CheckID("op_user_id", r.OpUserID); err != nil {
			return err
		}
	}
	return domain.CheckLen("resolution", r.Resolution, 0, domain.MaxReportResolutionLen)
}

// Reports files, lists and resolves message reports.
type Reports struct {
	vis    Visibility
	msgs   Messages
	store  Store
	events Events
	limit  Limit
	log    *slog.Logger
}

// ReportDeps are the Reports' collaborators; Events and Limit may be nil.
type ReportDeps struct {
	Visibility Visibility
	Messages   Messages
	Store      Store
	Events     Events
	Limit      Limit
	Log        *slog.Logger
}

// NewReports returns the report service.
func NewReports(d ReportDeps) *Reports {
	return &Reports{vis: d.Visibility, msgs: d.Messages, store: d.Store, events: d.Events, limit: d.Limit, log: d.Log}
}

// File reports the message at req.Seq of req.ConversationID (validated)
// for reporter, who must be able to see it as a pull would show it: a
// party or member (not_conversation_member otherwise), within their
// visible seqs and saved (message_not_found otherwise: beyond max_seq,
// before a joiner's first seq, after a leaver's last, or not saved yet).
// A user's own message and a notification (msg_type 1400 and up) cannot
// be reported (bad_request). The message is
// copied as it is now. Reporting the same message again answers the first
// report with duplicate true and stores nothing; every call counts against
// limits.report (too_many_requests). A new report appends the
// message_reported webhook event; failing to append it is logged, not
// returned (the report is stored and listed by GET /api/reports).
func (s *Reports) File(ctx context.Context, reporter string, req ReportRequest) (FiledJSON, error) {
	if s.limit != nil {
		if err := s.limit.AllowReport(ctx, reporter); err != nil {
			return FiledJSON{}, err
		}
	}
	minSeq, maxSeq, err := s.vis.Bounds(ctx, reporter, req.ConversationID)
	if err != nil {
		return FiledJSON{}, err
	}
	notVisible := domain.NewError(domain.ErrMessageNotFound,
		fmt.Sprintf("seq %d: no message you can see in this conversation (your visible seqs are %d–%d)", req.Seq, minSeq, maxSeq))
	if req.Seq < minSeq || req.Seq > maxSeq {
		return FiledJSON{}, notVisible
	}
	msgs, err := s.msgs.BySeqs(ctx, req.ConversationID, []int64{req.Seq})
	if err != nil {
		return FiledJSON{}, err
	}
	if len(msgs) == 0 || msgs[0].Seq != req.Seq || msgs[0].Status == domain.StatusFailed {
		return FiledJSON{}, notVisible
	}
	m := msgs[0]
	if !m.MsgType.UserSendable() {
		return FiledJSON{}, domain.BadField("seq", "is a notification (msg_type %d); only messages users wrote can be reported", m.MsgType)
	}
	if m.SenderID == reporter {
		return FiledJSON{}, domain.BadField("seq", "is your own message; report messages of others")
	}
	id, err := uuid.NewV7()
	if err != nil {
		return FiledJSON{}, fmt.Errorf("report id: %w", err)
	}
	rep, dup, err := s.store.Create(ctx, domain.Report{ID: id.String(), ReporterID: reporter, ConversationID: req.ConversationID,
		Seq: req.Seq, Reason: req.Reason, CreatedAt: time.Now().UnixMilli(), Message: m})
	if err != nil {
		return FiledJSON{}, err
	}
	if !dup && s.events != nil {
		if err := s.events.EmitWithID(ctx, configs.EventMessageReported, configs.EventMessageReported+":"+rep.ID, ReportOf(rep)); err != nil {
			s.log.Warn("message_reported event not appended; the report is stored", "report_id", rep.ID, "err", err)
		}
	}
	return FiledJSON{ReportID: rep.ID, Status: string(rep.Status), CreatedAt: rep.CreatedAt, Duplicate: dup}, nil
}

// List returns a page of reports (req.Status open, resolved or "" for
// all; bad_request for another status or a limit outside 0–100).
func (s *Reports) List(ctx context.Context, req ListRequest) (ListJSON, error) {
	status := domain.ReportStatus(req.Status)
	if status != "" && !status.Valid() {
		return ListJSON{}, domain.BadField("status", "must be open or resolved (or absent for both)")
	}
	switch {
	case req.Limit < 0 || req.Limit > MaxReportPage:
		return ListJSON{}, domain.BadField("limit", "must be 1–%d", MaxReportPage)
	case req.Limit == 0:
		req.Limit = DefaultReportPage
	}
	if len(req.Cursor) > 64 {
		return ListJSON{}, domain.BadField("cursor", "is not a next_cursor this server gave")
	}
	rows, err := s.store.List(ctx, status, req.Cursor, req.Limit+1)
	if err != nil {
		return ListJSON{}, err
	}
	out := ListJSON{Reports: make([]ReportJSON, 0, min(len(rows), req.Limit))}
	for i, r := range rows {
		if i == req.Limit {
			out.NextCursor = rows[i-1].ID
			break
		}
		out.Reports = append(out.Reports, ReportOf(r))
	}
	return out, nil
}

// Resolve marks report id resolved (validated req) and returns it; a
// report already resolved is returned unchanged, so a retry is harmless.
// report_not_found for an unknown id.
func (s *Reports) Resolve(ctx context.Context, id string, req ResolveRequest) (ReportJSON, error) {
	if err := domain.CheckLen("id", id, 1, 64); err != nil {
		return ReportJSON{}, err
	}
	r, err := s.store.Resolve(ctx, id, req.OpUserID, req.Resolution, time.Now().UnixMilli())
	if err != nil {
		return ReportJSON{}, err
	}
	return ReportOf(r), nil
}
