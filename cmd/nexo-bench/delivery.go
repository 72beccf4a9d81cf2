package main

// onShown handles a message shown to c: a push (byPush), a notify-mode
// pull (notify) or a gap-fill pull (neither). A push to a reconnected
// session of a message sent before it reconnected is a resend: it counts
// as recovered, like the gap fill, not as a delivery.
func (r *recorder) onShown(c *conn, msg *message, at int64, byPush, notify bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if msg.Status == statusUnavailable {
		r.unavailable++
		return
	}
	if r.acts != nil && isActionNotice(msg.MsgType) {
		r.onNotice(c, msg, at, byPush)
		return
	}
	m := r.lookup(msg.ClientMsgID)
	how := viaPull
	if byPush {
		how = viaPush
		if resumed := c.resumedAt.Load(); resumed != 0 && m != nil && m.sent < resumed {
			how = viaResend
		}
	}
	if !c.recv.show(msg, how, m != nil) {
		return
	}
	switch {
	case m == nil:
		if byPush {
			r.stray++
		}
		return
	case !m.to.expects(c) || m.from == c:
		if byPush { // a pull reads the whole window, the reader's own messages included
			r.unexpected++
		}
		return
	}
	if m.pic != nil {
		r.checkPicture(m, msg)
	}
	if how == viaPush || notify {
		m.delivered++
		if notify {
			r.tot.pulled++
		}
		t := r.count(at, func(c *eventCounts) *int64 { return &c.delivered })
		m.observe(t.del, r.hDel, at-m.sched)
	} else {
		m.recovered++
		r.tot.recovered++
		if how == viaResend {
			r.tot.resent++
		}
		m.observe(nil, r.hRecover, at-m.sched)
	}
	r.settle(m)
}
