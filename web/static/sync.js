// What the client does on every (re)connect and with the SDK's events:
// read the conversation list and groups; place the stream's messages and
// the receipts. The SDK pulls what was missed (docs/sdk.md).
// Installed on Client.prototype (client.js); `this` is the Client.

import { groupConversationID } from './ids.js';
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
   * sync runs after every (re)connect: the conversation list and groups,
   * and the open one is marked read. What was missed arrives in order from
   * the SDK's message stream, which fills the gap a drop left (onMessage).
   */
  async sync() {
    await Promise.all([this.loadConversationList(), this.loadGroups()]);
    if (this.current) {
      if (!this.current.historyLoaded) await this.open(this.current);
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

  onMessage(m) {
    if (!m.conversation_id || !(m.seq > 0)) return;
    const known = this.convs.has(m.conversation_id);
    const c = this.conv(m.conversation_id);
    // A conversation not shown yet may be new to the list.
    if (!known || !c.anchored) this.refreshListSoon();
    if (!known) c.listed = true;
    // Pushes carry saved messages (unless deliver_before_saved is on; then
    // an early ACK is refused with bad_seq and repeated later).
    c.maxSeq = Math.max(c.maxSeq, m.seq);
    // The SDK's stream has no holes from its first message on (it starts at
    // the delivered cursor), so the run starts right below it.
    if (!c.anchored) c.anchor(m.seq - 1);
    this.take(c, [m], true);
    this.scheduleAck(c);
  },

  /** onReceipt applies the SDK's receipt event: a peer's delivered or read cursor. */
  onReceipt(e) {
    this.conv(e.conversationId).receipt(e.ackType, e.userId, e.seq);
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
