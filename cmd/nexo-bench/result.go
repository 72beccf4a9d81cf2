package main

import (
	"slices"
)

// Result is one run, as written by --out and read by summarize and the
// HTML report. docs/bench/README.md explains every field.
type Result struct {
	Tool      string  `json:"tool"`
	Schema    int     `json:"schema"`
	Name      string  `json:"name"`
	Scenario  string  `json:"scenario"`
	StartedAt string  `json:"started_at"`
	Target    Target  `json:"target"`
	Machine   Machine `json:"machine"`
	Params    Params  `json:"params"`
	// Usage covers the sending phase (warm-up and measured window).
	Usage Usage `json:"usage"`

	MeasuredSeconds float64          `json:"measured_s"`
	Counts          Counts           `json:"counts"`
	Throughput      Throughput       `json:"throughput_per_s"`
	Latency         Latencies        `json:"latency"`
	Correctness     Correctness      `json:"correctness"`
	Errors          map[string]int64 `json:"errors"`
	OK              bool             `json:"ok"`
	// Notes say what the harness had to leave out against this server.
	Notes []string `json:"notes,omitempty"`

	Timeline []TimelinePoint         `json:"timeline,omitempty"`
	Curves   map[string][][2]float64 `json:"curves,omitempty"`

	Connect   *ConnectResult   `json:"connect,omitempty"`
	Reconnect *ReconnectResult `json:"reconnect,omitempty"`
}

// Target says what was measured.
type Target struct {
	URL       string `json:"url"`
	InProcess bool   `json:"inprocess"`
	// Mode is the in-process server's pipeline switches during the run
	// ("two_phase=on deliver_before_saved=off"); empty for a remote server.
	Mode string `json:"mode,omitempty"`
}

// Machine is where the bench ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUModel  string `json:"cpu_model,omitempty"`
}

// Params are the run's load parameters.
type Params struct {
	Pairs       int     `json:"pairs,omitempty"`
	Groups      int     `json:"groups,omitempty"`
	Members     int     `json:"members,omitempty"`
	OnlineShare float64 `json:"online_share,omitempty"`
	Connections int     `json:"connections,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	Inflight    int     `json:"inflight,omitempty"`
	Await       string  `json:"await,omitempty"`
	Senders     int     `json:"senders,omitempty"`
	DurationS   float64 `json:"duration_s"`
	WarmupS     float64 `json:"warmup_s"`
	GraceS      float64 `json:"grace_s"`
	Payload     int     `json:"payload_bytes,omitempty"`
	Loop        string  `json:"loop,omitempty"` // "open" or "closed"
	// PictureShare, ActionShare: --picture-share, --action-share.
	PictureShare float64 `json:"picture_share,omitempty"`
	ActionShare  float64 `json:"action_share,omitempty"`
}

// Counts are totals over the whole run (warm-up included).
type Counts struct {
	Messages           int64 `json:"messages"`
	Measured           int64 `json:"measured_messages"`
	Accepted           int64 `json:"accepted"`
	AckAccepted        int64 `json:"ack_accepted"`
	AckSaved           int64 `json:"ack_saved"`
	Saved              int64 `json:"saved"`
	Refused            int64 `json:"refused"`
	ExpectedDeliveries int64 `json:"expected_deliveries"`
	MeasuredExpected   int64 `json:"measured_expected_deliveries"`
	Delivered          int64 `json:"delivered"`
	DeliveredByPull    int64 `json:"delivered_by_notify_pull"`
	Recovered          int64 `json:"recovered_by_gap_fill"`
	RecoveredByResend  int64 `json:"recovered_by_resend"`
	// SearchProbes are --search-probe's searched messages; SearchMisses
	// those not found within 5 s of their ACK(saved).
	SearchProbes int64 `json:"search_probes,omitempty"`
	SearchMisses int64 `json:"search_misses,omitempty"`
	// The chat mix (docs/bench/README.md, "Pictures and actions").
	MixCounts
}

// Throughput is events per second inside the measurement window.
type Throughput struct {
	Sent      float64 `json:"sent"`
	Accepted  float64 `json:"accepted"`
	Saved     float64 `json:"saved"`
	Delivered float64 `json:"delivered"`
}

// Latencies are measured from each message's scheduled send time.
type Latencies struct {
	Accepted  Percentiles `json:"accepted"`
	Saved     Percentiles `json:"saved"`
	Lag       Percentiles `json:"accepted_to_saved"`
	Delivery  Percentiles `json:"delivery"`
	SendDelay Percentiles `json:"send_delay"`
	Recovery  Percentiles `json:"gap_fill,omitzero"`
	// Searchable is --search-probe's ACK(saved) → first search that finds
	// the message (its sender's, inside the conversation).
	Searchable Percentiles `json:"searchable_after_saved,omitzero"`
	// ActionAnswer is an action's due time → its answer; ActionNotice its
	// due time → each member connection's notice (--action-share).
	ActionAnswer Percentiles `json:"action_answer,omitzero"`
	ActionNotice Percentiles `json:"action_notice,omitzero"`
}

// Correctness counters: all zero on a healthy run.
type Correctness struct {
	LostUnsaved         int64 `json:"lost_unsaved"`
	LostDeliveries      int64 `json:"lost_deliveries"`
	LostUndeliveredMsgs int64 `json:"lost_undelivered_messages"`
	Unanswered          int64 `json:"unanswered"`
	DuplicatesRaw       int64 `json:"duplicates_raw"`
	DuplicatesDeduped   int64 `json:"duplicates_after_dedupe"`
	SeqConflicts        int64 `json:"seq_conflicts"`
	ReordersReceiver    int64 `json:"reorders_receiver"`
	ReordersSender      int64 `json:"reorders_sender"`
	SeqGaps             int64 `json:"seq_gaps"`
	// Resequenced counts messages whose ACK(saved) named another seq than
	// their ACK(accepted) (the save stage's collision path).
	Resequenced int64 `json:"resequenced"`
	Unavailable int64 `json:"unavailable_placeholders"`
	Unexpected  int64 `json:"unexpected_pushes"`
	// Informational, not failures:
	SavedBeforeAnswer int64 `json:"saved_push_before_answer"`
	DuplicateSaved    int64 `json:"duplicate_saved_acks"`
	// ResentDuplicates are a reconnect's resends of messages the session
	// had already shown: at-least-once by design (docs/protocol.md).
	ResentDuplicates int64 `json:"resent_duplicates"`
	Stray            int64 `json:"stray_frames"`
	// The chat mix's counters (failures but for stray notices).
	MixCorrectness
}

// failures is the sum of the counters that must be zero.
func (c Correctness) failures() int64 {
	return c.LostUnsaved + c.LostDeliveries + c.Unanswered + c.DuplicatesRaw + c.DuplicatesDeduped +
		c.SeqConflicts + c.ReordersReceiver + c.ReordersSender + c.SeqGaps + c.Resequenced + c.Unexpected +
		c.MixCorrectness.failures()
}

// finish computes the result of a drained run. conns are every connection
// that took part (their receive-side counters are added up).
func (r *recorder) finish(conns []*conn) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	var res Result
	c := &res.Counts
	k := &res.Correctness
	type senderConv struct {
		from *conn
		conv string
	}
	lastSeq := map[senderConv]int64{}
	seqs := map[string][]int64{}
	for _, m := range r.msgs {
		c.Messages++
		if m.measured {
			c.Measured++
		}
		switch {
		case m.reason != "":
			c.Refused++
			continue
		case m.acked == 0:
			k.Unanswered++
			continue
		}
		c.Accepted++
		if m.ack == ackSaved {
			c.AckSaved++
		} else {
			c.AckAccepted++
		}
		if m.saved != 0 {
			c.Saved++
		} else {
			k.LostUnsaved++
		}
		c.ExpectedDeliveries += int64(m.expect)
		if m.measured {
			c.MeasuredExpected += int64(m.expect)
		}
		if short := m.expect - m.delivered - m.recovered; short > 0 {
			k.LostDeliveries += int64(short)
			k.LostUndeliveredMsgs++
		}
		key := senderConv{m.from, m.to.conv}
		if m.seq < lastSeq[key] {
			k.ReordersSender++
		}
		lastSeq[key] = max(lastSeq[key], m.seq)
		seqs[m.to.conv] = append(seqs[m.to.conv], m.seq)
	}
	r.finishMix(&res, seqs)
	for _, s := range seqs {
		slices.Sort(s)
		for i := 1; i < len(s); i++ {
			switch d := s[i] - s[i-1]; {
			case d == 0:
				k.SeqConflicts++ // two messages acknowledged with one seq
			case d > 1:
				k.SeqGaps += d - 1
			}
		}
	}
	for _, cn := range conns {
		if cn.recv == nil {
			continue
		}
		raw, dedup, conflicts, reorders, resent := cn.recv.counts()
		k.ResentDuplicates += resent
		k.DuplicatesRaw += raw
		k.DuplicatesDeduped += dedup
		k.SeqConflicts += conflicts
		k.ReordersReceiver += reorders
	}
	k.Unavailable, k.Unexpected, k.Resequenced = r.unavailable, r.unexpected, r.resequenced
	k.SavedBeforeAnswer, k.DuplicateSaved, k.Stray = r.savedFirst, r.dupSavedAcks, r.stray
	c.Delivered, c.DeliveredByPull, c.Recovered, c.RecoveredByResend = r.tot.delivered, r.tot.pulled, r.tot.recovered, r.tot.resent

	secs := float64(r.to-r.from) / 1e9
	res.MeasuredSeconds = round3(secs)
	if secs > 0 {
		res.Throughput = Throughput{
			Sent: round1(float64(r.win.sent) / secs), Accepted: round1(float64(r.win.accepted) / secs),
			Saved: round1(float64(r.win.saved) / secs), Delivered: round1(float64(r.win.delivered) / secs),
		}
	}
	res.Latency = Latencies{Accepted: r.hAcc.summary(), Saved: r.hSaved.summary(), Lag: r.hLag.summary(),
		Delivery: r.hDel.summary(), SendDelay: r.hSendDelay.summary(), Recovery: r.hRecover.summary(),
		Searchable: r.hSearch.summary()}
	if r.acts != nil {
		res.Latency.ActionAnswer, res.Latency.ActionNotice = r.acts.hAnswer.summary(), r.acts.hNotice.summary()
	}
	c.SearchProbes, c.SearchMisses = r.probes, r.probeMisses
	res.Curves = map[string][][2]float64{
		"accepted": r.hAcc.curve(), "saved": r.hSaved.curve(), "accepted_to_saved": r.hLag.curve(), "delivery": r.hDel.curve(),
	}
	res.Timeline = r.tl.points()
	res.Errors = map[string]int64{}
	for k, v := range r.errors {
		res.Errors[k] = v
	}
	res.OK = k.failures() == 0 && len(r.errors) == 0
	return res
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
