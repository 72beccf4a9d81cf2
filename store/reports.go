package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// reportRow is one message report (docs/moderation.md, "Reports"): one per
// reporter and message (uk_report), with the message copied as it was.
type reportRow struct {
	ID             string `gorm:"column:report_id;type:varchar(36);primaryKey"`
	ReporterID     string `gorm:"column:reporter_id;type:varchar(64);not null;uniqueIndex:uk_report,priority:1"`
	ConversationID string `gorm:"column:conversation_id;type:varchar(256);not null;uniqueIndex:uk_report,priority:2"`
	Seq            int64  `gorm:"column:seq;not null;uniqueIndex:uk_report,priority:3"`
	Reason         string `gorm:"column:reason;type:varchar(500);not null"`
	Status         string `gorm:"column:status;type:varchar(16);not null;index:idx_report_status,priority:1"`
	CreatedAt      int64  `gorm:"column:created_at;not null;autoCreateTime:false"`
	ResolvedAt     int64  `gorm:"column:resolved_at;not null;default:0"`
	ResolvedBy     string `gorm:"column:resolved_by;type:varchar(64);not null;default:''"`
	Resolution     string `gorm:"column:resolution;type:varchar(500);not null;default:''"`
	ServerMsgID    string `gorm:"column:server_msg_id;type:varchar(64);not null"`
	SenderID       string `gorm:"column:sender_id;type:varchar(64);not null;index:idx_report_sender"`
	RecvID         string `gorm:"column:recv_id;type:varchar(64);not null;default:''"`
	GroupID        string `gorm:"column:group_id;type:varchar(64);not null;default:''"`
	SessionType    int    `gorm:"column:session_type;not null"`
	MsgType        int    `gorm:"column:msg_type;not null"`
	MsgStatus      string `gorm:"column:msg_status;type:varchar(16);not null"`
	SendAt         int64  `gorm:"column:send_at;not null"`
	// Content is the message's content as JSON (reportContent), MEDIUMTEXT
	// on MySQL: a custom body may pass TEXT's 64 KiB.
	Content string `gorm:"column:content;type:mediumtext;not null"`
}

func (reportRow) TableName() string { return "message_reports" }

// reportContent is how a reported message's content is kept.
type reportContent struct {
	Text   string `json:"text,omitempty"`
	Image  string `json:"image,omitempty"`
	Video  string `json:"video,omitempty"`
	Audio  string `json:"audio,omitempty"`
	File   string `json:"file,omitempty"`
	Custom string `json:"custom,omitempty"`
}

// ReportRepo stores message reports.
type ReportRepo struct{ db *DB }

// NewReportRepo returns the report store on db.
func NewReportRepo(db *DB) *ReportRepo { return &ReportRepo{db: db} }

// Create stores r (ID, reporter, message and reason set) as open. When the
// reporter already reported this message it stores nothing and returns
// the earlier report and true.
func (r *ReportRepo) Create(ctx context.Context, rep domain.Report) (domain.Report, bool, error) {
	m := rep.Message
	content, err := json.Marshal(reportContent{Text: m.Content.Text, Image: m.Content.Image, Video: m.Content.Video,
		Audio: m.Content.Audio, File: m.Content.File, Custom: m.Content.Custom})
	if err != nil {
		return domain.Report{}, false, err
	}
	row := reportRow{ID: rep.ID, ReporterID: rep.ReporterID, ConversationID: rep.ConversationID, Seq: rep.Seq,
		Reason: rep.Reason, Status: string(domain.ReportOpen), CreatedAt: rep.CreatedAt,
		ServerMsgID: m.ServerMsgID, SenderID: m.SenderID, RecvID: m.RecvID, GroupID: m.GroupID,
		SessionType: int(m.SessionType), MsgType: int(m.MsgType), MsgStatus: string(m.Status), SendAt: m.SendAt,
		Content: string(content)}
	err = mapErr(r.db.Gorm.WithContext(ctx).Create(&row).Error, domain.ErrReportNotFound)
	if errors.Is(err, domain.ErrDuplicate) {
		var old reportRow
		err := r.db.Gorm.WithContext(ctx).Where("reporter_id = ? AND conversation_id = ? AND seq = ?",
			rep.ReporterID, rep.ConversationID, rep.Seq).Take(&old).Error
		if err != nil {
			return domain.Report{}, false, fmt.Errorf("report by %s of %s/%d: %w", rep.ReporterID, rep.ConversationID, rep.Seq, mapErr(err, domain.ErrReportNotFound))
		}
		return old.domain(), true, nil
	}
	if err != nil {
		return domain.Report{}, false, fmt.Errorf("store report: %w", err)
	}
	return row.domain(), false, nil
}

// Get returns the report id: domain.ErrReportNotFound when none.
func (r *ReportRepo) Get(ctx context.Context, id string) (domain.Report, error) {
	var row reportRow
	if err := r.db.Gorm.WithContext(ctx).Where("report_id = ?", id).Take(&row).Error; err != nil {
		return domain.Report{}, mapErr(err, domain.ErrReportNotFound)
	}
	return row.domain(), nil
}

// List returns up to limit reports with status (any when ""), in the order
// they were filed (report IDs are UUIDv7), after the report ID after ("":
// from the first).
func (r *ReportRepo) List(ctx context.Context, status domain.ReportStatus, after string, limit int) ([]domain.Report, error) {
	q := r.db.Gorm.WithContext(ctx).Model(&reportRow{})
	if status != "" {
		q = q.Where("status = ?", string(status))
	}
	if after != "" {
		q = q.Where("report_id > ?", after)
	}
	var rows []reportRow
	if err := q.Order("report_id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list reports: %w", err)
	}
	out := make([]domain.Report, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// Resolve marks the open report id resolved by by (the app's own name for
// who did, may be "") with resolution, at now, and returns it. A report
// already resolved is returned unchanged (the first resolution stands);
// domain.ErrReportNotFound when none.
func (r *ReportRepo) Resolve(ctx context.Context, id, by, resolution string, now int64) (domain.Report, error) {
	err := r.db.Gorm.WithContext(ctx).Model(&reportRow{}).
		Where("report_id = ? AND status = ?", id, string(domain.ReportOpen)).
		Updates(map[string]any{"status": string(domain.ReportResolved), "resolved_at": now, "resolved_by": by, "resolution": resolution}).Error
	if err != nil {
		return domain.Report{}, fmt.Errorf("resolve report %s: %w", id, err)
	}
	return r.Get(ctx, id)
}

func (row reportRow) domain() domain.Report {
	var c reportContent
	_ = json.Unmarshal([]byte(row.Content), &c) // written by Create; empty on a damaged row
	return domain.Report{
		ID: row.ID, ReporterID: row.ReporterID, ConversationID: row.ConversationID, Seq: row.Seq, Reason: row.Reason,
		Status: domain.ReportStatus(row.Status), CreatedAt: row.CreatedAt, ResolvedAt: row.ResolvedAt,
		ResolvedBy: row.ResolvedBy, Resolution: row.Resolution,
		Message: domain.Message{ServerMsgID: row.ServerMsgID, ConversationID: row.ConversationID, Seq: row.Seq,
			SenderID: row.SenderID, RecvID: row.RecvID, GroupID: row.GroupID, SessionType: domain.SessionType(row.SessionType),
			MsgType: domain.MsgType(row.MsgType), Status: domain.MessageStatus(row.MsgStatus), SendAt: row.SendAt,
			Content: domain.Content{Text: c.Text, Image: c.Image, Video: c.Video, Audio: c.Audio, File: c.File, Custom: c.Custom}},
	}
}
