package domain

import (
	"context"
	"log/slog"
)

// Audit writes the structured audit lines of the message path
// (docs/operations.md), each a line with message "audit",
// point, result ("ok" or "failed") and instance_id, plus what the point
// knows of:
//
//   - the message: server_msg_id, conversation_id, seq (AuditMsg);
//   - the user and connection the line is about: user_id, platform_id,
//     conn_id (AuditConn);
//   - where a cursor moves: cursor_before, cursor_after (AuditCursor).
//
// The points and which keys each carries are listed in docs/operations.md
// ("Audit lines"). Successes log at debug, failures at warn with err.
//
// Each level passes its own RateLog, so an outage cannot flood the log and
// a flood of successes cannot crowd out the failures. A nil *Audit writes
// nothing.
type Audit struct {
	ok, fail *RateLog
}

// NewAudit returns an Audit writing to log with instance_id on every line.
// perSecond and burst bound each level (debug successes, warn failures)
// separately.
func NewAudit(log *slog.Logger, instanceID string, perSecond float64, burst int) *Audit {
	log = log.With("instance_id", instanceID)
	return &Audit{ok: NewRateLog(log, perSecond, burst), fail: NewRateLog(log, perSecond, burst)}
}

// On reports whether success lines are written at all (the logger is at
// debug): hot paths build their attributes only then.
func (a *Audit) On(ctx context.Context) bool {
	return a != nil && a.ok.Enabled(ctx, slog.LevelDebug)
}

// OK writes one success line (debug) of point (e.g. "ack", "push").
func (a *Audit) OK(ctx context.Context, point string, attrs ...slog.Attr) {
	if !a.On(ctx) {
		return
	}
	a.ok.LogAttrs(ctx, slog.LevelDebug, "audit", append(attrs, slog.String("point", point), slog.String("result", "ok"))...)
}

// Fail writes one failure line (warn) of point with result "failed" and
// err (when not nil).
func (a *Audit) Fail(ctx context.Context, point string, err error, attrs ...slog.Attr) {
	if a == nil {
		return
	}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	a.fail.LogAttrs(ctx, slog.LevelWarn, "audit", append(attrs, slog.String("point", point), slog.String("result", "failed"))...)
}

// AuditMsg is the message's audit keys: server_msg_id, conversation_id, seq.
func AuditMsg(m *Message) []slog.Attr {
	return []slog.Attr{slog.String("server_msg_id", m.ServerMsgID), slog.String("conversation_id", m.ConversationID), slog.Int64("seq", m.Seq)}
}

// AuditConn is the keys of the user and connection a line is about:
// user_id, platform_id, conn_id ("" for an HTTP request).
func AuditConn(userID string, platformID int, connID string) []slog.Attr {
	return []slog.Attr{slog.String("user_id", userID), slog.Int("platform_id", platformID), slog.String("conn_id", connID)}
}

// AuditCursor is the keys of a cursor that moves: cursor_before,
// cursor_after.
func AuditCursor(before, after int64) []slog.Attr {
	return []slog.Attr{slog.Int64("cursor_before", before), slog.Int64("cursor_after", after)}
}
