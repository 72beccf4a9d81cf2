// What the client does on every (re)connect and on every push: read the
// conversation list, groups and newest seqs, fill the gaps by pull; place pushed messages, receipts and save results.
// Installed on Client.prototype (client.js); `this` is the Client.

import { better } from './conversation.js';
import { groupConversationID, Push, Req } from './ids.js';
import { RequestError } from './socket.js';

export const SyncMethods = {
  async onOpen() {
    // Own messages not yet saved are the SDK's to resend (socket.js).
    try {
      await this.sync();
    } catch (err) {
      if (!(err instanceof RequestError && err.reason === 'disconnected')) this.notice(`Sync failed: ${err.message}`, 'error');
    }
  },

  /**
   * sync runs after every (re)connect: the conversation list and the
   * newest seqs, and the open one is marked read. What was missed arrives
   * in order from the SDK's message stream, which fills the gap a drop
   * left (socket.js, onMessage).
   */
  async sync() {
    await Promise.all([this.loadConversationList(), this.loadGroups()]);
    await this.loadNewestSeqs();
    if (this.current) {
      if (!this.current.anchored) await this.open(this.current);
      this.scheduleAck(this.current);
    }
    this.changed();
  },

  async loadConversationList() {
    if (this.unsupported.has('list')) return;
    const all = [];
    // The server pages by at most 100; a person with more conversations
    // than a few pages sees the newest ones (pinned first).
    for (let offset = 0; offset < 500; offset += 100) {
      let data;
      try {
        data = await this.api.get(`/conversation/list?offset=${offset}&limit=100`);
      } catch (err) {
        if (err.reason === 'not_found') this.unsupported.add('list');
        else throw err;
        return;
      }
      const page = data.conversations || [];
      all.push(...page);
      if (page.length < 100 || all.length >= (data.total || 0)) break;
    }
    for (const x of all) {
      const c = this.conv(x.conversation_id);
      c.listed = true;
      c.maxSeq = Math.max(c.maxSeq, x.max_seq || 0);
      c.readSeq = Math.max(c.readSeq, x.read_seq || 0);
      if (x.min_seq) c.minSeq = x.min_seq;
      // The list is a snapshot up to its max_seq; messages above it that
      // arrived meanwhile are added, so a live count is never lost.
      const above = [...c.msgs.values()].filter((m) => m.seq > (x.max_seq || 0) && m.seq > c.readSeq && c.countsAsUnread(m));
      c.listedMax = x.max_seq || 0;
      c.unread = this.reading(c) ? 0 : (x.unread_count || 0) + above.length;
      c.mentions = this.reading(c) ? 0 : (x.unread_mention_count || (x.has_unread_mention ? 1 : 0)) + above.filter((m) => c.mentionsMe(m)).length;
      c.pinned = !!x.is_pinned;
      c.recvMsgOpt = x.recv_msg_opt || 0;
      c.updatedAt = Math.max(c.updatedAt, x.updated_at || 0, (x.latest_msg && x.latest_msg.send_at) || 0);
      if (x.latest_msg && (!c.latest || (x.latest_msg.seq || 0) > (c.latest.seq || 0))) c.latest = x.latest_msg;
      if (x.peer_user_id) this.ensureUser(x.peer_user_id);
    }
  },

  async loadGroups() {
    const all = [];
    // Pages of 500, following next_cursor ("" after the last page).
    let cursor = '';
    for (let pages = 0; pages < 100; pages++) {
      let data;
      try {
        data = await this.api.get(`/group/list?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      } catch (err) {
        if (err.reason === 'not_found') this.unsupported.add('groups');
        return;
      }
      all.push(...(data.groups || []));
      cursor = data.next_cursor || '';
      if (!cursor) break;
    }
    for (const g of all) {
      this.groups.set(g.group_id, g);
      const c = this.conv(groupConversationID(g.group_id));
      c.dismissed = g.status === 'dismissed';
      if (this.unsupported.has('list')) c.listed = true; // no conversation list: groups come from here
    }
  },

  /** loadNewestSeqs reads every conversation's {max_seq, min_seq, read_seq, delivered_seq} (WS 1001). */
  async loadNewestSeqs() {
    if (this.unsupported.has('newest')) return;
    const entries = [];
    // Pages of 1,000, following next_cursor ("" after the last page).
    let cursor = '';
    for (let pages = 0; pages < 100; pages++) {
      let data;
      try {
        data = await this.conn.request(Req.NEWEST_SEQ, cursor ? { cursor, limit: 1000 } : { limit: 1000 });
      } catch (err) {
        if (err.reason === 'unknown_request') {
          this.unsupported.add('newest');
          return;
        }
        throw err;
      }
      entries.push(...newestEntries(data));
      cursor = data.next_cursor || '';
      if (!cursor) break;
    }
    for (const [id, s] of entries) {
      const c = this.conv(id);
      c.maxSeq = Math.max(c.maxSeq, s.max_seq || 0);
      if (s.min_seq) c.minSeq = s.min_seq;
      c.readSeq = Math.max(c.readSeq, s.read_seq || 0);
      c.deliveredSeq = Math.max(c.deliveredSeq, s.delivered_seq || 0, s.read_seq || 0);
    }
  },

  onPush(f) {
    const d = f.data || {};
    switch (f.req_identifier) {
      case Push.MSG: return undefined; // the SDK's ordered stream brings it (onMessage)
      case Push.ACK: return this.onAckPush(d);
      case Push.TYPING: return this.onTyping(d);
      case Push.GROUP_NOTIFY: {
        const c = this.conv(d.conversation_id);
        c.maxSeq = Math.max(c.maxSeq, d.max_seq || 0);
        // The SDK pulls the new messages; a conversation not shown yet
        // may be new to the list.
        if (!c.anchored) this.refreshListSoon();
        this.changed();
        return undefined;
      }
      case Push.ERROR:
        if (d.reason === 'save_failed') return this.onSaveFailed(d);
        if (d.reason && d.reason !== 'kicked') this.notice(`Server: ${d.reason}${d.detail ? ` — ${d.detail}` : ''}`, 'error');
        return undefined;
      default:
        return undefined;
    }
  },

  onMessage(m) {
    if (!m.conversation_id || !(m.seq > 0)) return;
    const known = this.convs.has(m.conversation_id);
    const c = this.conv(m.conversation_id);
    if (!known) {
      c.listed = true;
      this.refreshListSoon();
    }
    // Pushes carry saved messages (unless deliver_before_saved is on; then
    // an early ACK is refused with bad_seq and repeated later).
    c.maxSeq = Math.max(c.maxSeq, m.seq);
    // The SDK's stream has no holes from its first message on (it starts at
    // the delivered cursor), so the run starts right below it.
    if (!c.anchored) c.anchor(m.seq - 1);
    this.take(c, [m], true);
    this.scheduleAck(c);
  },

  onAckPush(d) {
    const c = this.conv(d.conversation_id);
    switch (d.ack_type) {
      case 'saved': {
        const m = c.own(d.client_msg_id);
        c.maxSeq = Math.max(c.maxSeq, d.seq || 0);
        if (m) {
          m.state = better(m.state, 'saved');
          if (m.state === 'failed') break;
          m.server_msg_id = d.server_msg_id || m.server_msg_id;
          if (d.seq && d.seq !== m.seq) c.place(m, d.seq);
        }
        this.scheduleAck(c);
        break;
      }
      case 'delivered':
      case 'read':
        c.receipt(d.ack_type, d.user_id, d.seq || 0);
        break;
      case 'revoked':
        this.markRevoked(c, d.seq);
        break;
      default:
        break;
    }
    this.changed();
  },

  onSaveFailed(d) {
    const c = this.conv(d.conversation_id);
    const m = c.own(d.client_msg_id);
    if (!m) return;
    c.unplace(m);
    m.state = 'failed';
    m.failReason = 'save_failed';
    m.failDetail = 'the server could not store the message';
    this.changed();
  },

  refreshListSoon() {
    if (this.listTimer) return;
    this.listTimer = setTimeout(() => {
      this.listTimer = 0;
      this.loadConversationList().then(() => this.changed(), () => {});
    }, 300);
  },
};

/**
 * newestEntries reads a 1001 answer as [conversation_id, {max_seq, …}]
 * pairs, whether it is a map keyed by conversation_id or a list.
 */
export function newestEntries(data) {
  const src = data.conversations || data.seqs || data;
  if (Array.isArray(src)) return src.filter((x) => x && x.conversation_id).map((x) => [x.conversation_id, x]);
  return Object.entries(src).filter(([, v]) => v && typeof v === 'object');
}
