package domain

// ReportStatus is where a message report stands.
type ReportStatus string

// Report statuses: every report starts open; the app's backend resolves it.
const (
	ReportOpen     ReportStatus = "open"
	ReportResolved ReportStatus = "resolved"
)

// Valid reports whether s is a known status.
func (s ReportStatus) Valid() bool { return s == ReportOpen || s == ReportResolved }

// Report limits, in characters.
const (
	MaxReportReasonLen     = 500
	MaxReportResolutionLen = 500
)

// Report is one user's report of one message, with a copy of the message
// as it was when reported (Message: ServerMsgID, SenderID, RecvID,
// GroupID, SessionType, MsgType, Content, Status, SendAt), so a later
// recall or erasure does not take the evidence away. Times are Unix ms;
// ResolvedAt is 0 while open.
type Report struct {
	ID             string
	ReporterID     string
	ConversationID string
	Seq            int64
	Reason         string
	Status         ReportStatus
	CreatedAt      int64
	ResolvedAt     int64
	ResolvedBy     string
	Resolution     string
	Message        Message
}
