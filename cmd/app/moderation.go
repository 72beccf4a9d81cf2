package app

import (
	"github.com/nexo-im/nexo/configs"
	"github.com/nexo-im/nexo/gateway/limits"
	"github.com/nexo-im/nexo/gateway/routes"
	"github.com/nexo-im/nexo/services/chat"
	"github.com/nexo-im/nexo/services/moderation"
	"github.com/nexo-im/nexo/store"
)

// SetModeration replaces the word filter's words and action at run time
// (SIGHUP; moderation.blocked_words_file is read again). On an error —
// the file cannot be read, a word is too long — the filter in force is
// kept and the error returned for the caller to log.
func (a *App) SetModeration(m configs.Moderation) error {
	if err := a.words.Reload(m); err != nil {
		return err
	}
	a.log.Info("word filter reloaded", "words", a.words.Words(), "action", m.Action)
	return nil
}

// buildReports wires message reports: the service on the pull rules
// (puller) and the stored messages, the message_reported event, the
// per-user limit, and POST /msg/report with WS 1113. The server API's
// routes are mounted by buildIntegration from a.reports.
func (a *App) buildReports(puller *chat.Puller, msgs *store.MessageRepo, hooks webhooks) {
	var events moderation.Events
	if hooks.emitter != nil {
		events = hooks.emitter
	}
	a.reports = moderation.NewReports(moderation.ReportDeps{
		Visibility: puller, Messages: msgs, Store: store.NewReportRepo(a.db), Events: events,
		Limit: limits.NewReports(a.limiter, limits.Rule{Rate: a.cfg.Limits.Report.Rate,
			Period: a.cfg.Limits.Report.Period, Burst: a.cfg.Limits.Report.Burst}),
		Log: a.log,
	})
	routes.Reports(a.server, a.ws, a.reports, a.cfg.HTTP.MaxBodyBytes, a.log)
}
