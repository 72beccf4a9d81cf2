// The chat client without its view: conversations, sending with delivery
// states, sync after every (re)connect, gap filling by pull under the
// contiguous-prefix rule, delivered/read ACKs, receipts, recall and groups.
// The view subscribes with onChange and reads the state it needs.

import { isAuthLost } from './api.js';
import { Connection, RequestError } from './socket.js';
import { Conversation, MAX_FILL, better, isNotification } from './conversation.js';
import { GROUP, MSG_AT_TEXT, MSG_TEXT, Req, newClientMsgID, singleConversationID } from './ids.js';
import { SyncMethods } from './sync.js';
import { GroupMethods } from './groups.js';

/** PAGE is how many messages one "load earlier" or first open asks for. */
export const PAGE = 50;
/** MAX_PAGES_TO_SEQ bounds the pages openAt loads to reach an old message (PAGE each). */
const MAX_PAGES_TO_SEQ = 40;
/** PULL_LIMIT is the most seqs one pull returns (the server clamps at 100). */
const PULL_LIMIT = 100;
/** PENDING_RETRY_MS: how long after a page stopped at an in-flight seq the fill looks again. */
const PENDING_RETRY_MS = 1000;
/** ACK_DELAY coalesces the ACKs of a burst into one frame per conversation. */
const ACK_DELAY = 150;

/** Typing: sent at most every TYPING_EVERY_MS while typing; shown for TYPING_SHOWN_MS after the last. */
const TYPING_EVERY_MS = 3000;
const TYPING_SHOWN_MS = 5000;

/** Client is one signed-in user's chat state and connection. */
export class Client {
  constructor(api) {
    this.api = api;
    this.me = api.session.userID;
    this.convs = new Map();
    this.groups = new Map(); // group_id → group JSON
    this.members = new Map(); // group_id → [member JSON]
    this.users = new Map(); // user_id → profile (nickname)
    this.typists = new Map(); // conversation_id → Map(user_id → expiry ms)
    this.typingSentAt = 0;
    this.current = null;
    this.listeners = new Set();
    this.notices = [];
    this.status = { state: 'stopped' };
    this.ended = null; // {reason, detail} once the session can no longer continue
    this.unsupported = new Set(); // features the server does not offer (unknown_request / not_found)
    this.ackTimers = new Map();
    this.filling = new Map();
    this.fillRetries = new Map(); // conversation_id → timer of a fill retried after a "not yet" page
    this.changeQueued = false;
    this.conn = new Connection(() => this.api.session.token, () => this.me, {
      open: () => this.onOpen(),
      push: (f) => this.onPush(f),
      message: (m) => this.onMessage(m),
      state: (s, info) => { this.status = { state: s, ...info }; this.changed(); },
      gate: (reason, detail) => this.onGate(reason, detail),
    });
    this.onVisible = () => { if (document.visibilityState === 'visible' && this.current) this.scheduleAck(this.current); };
  }

  // ----- lifecycle -----------------------------------------------------

  start() {
    document.addEventListener('visibilitychange', this.onVisible);
    this.conn.start();
  }

  stop() {
    document.removeEventListener('visibilitychange', this.onVisible);
    this.conn.stop();
    for (const t of this.ackTimers.values()) clearTimeout(t);
    for (const t of this.fillRetries.values()) clearTimeout(t);
  }

  /** tokenRefreshed reconnects with the new token (the old one's sockets are closed by the server). */
  tokenRefreshed() {
    if (!this.ended) this.conn.restart();
  }

  /** reconnect is the user's "Reconnect" after a kick. */
  reconnect() {
    this.ended = null;
    this.conn.restart();
  }

  onChange(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** changed tells the view once per task, however many updates came. */
  changed() {
    if (this.changeQueued) return;
    this.changeQueued = true;
    queueMicrotask(() => {
      this.changeQueued = false;
      for (const fn of this.listeners) fn();
    });
  }

  notice(text, kind = 'info') {
    this.notices.push({ text, kind, at: Date.now() });
    if (this.notices.length > 5) this.notices.shift();
    this.changed();
  }

  end(reason, detail) {
    this.ended = { reason, detail };
    this.changed();
  }

  async tokenStillValid() {
    try {
      await this.api.get('/user/info');
      return true;
    } catch (err) {
      if (isAuthLost(err)) {
        this.end(err.reason, err.detail);
        return false;
      }
      return true; // the server is unreachable: keep trying
    }
  }

  onGate(reason, detail) {
    if (reason === 'token_expired') {
      this.api.refresh().then(() => this.conn.restart(), (err) => this.end(err.reason || reason, err.detail || detail));
      return;
    }
    if (reason === 'session_invalid') {
      // Our own refresh revoked the socket's token: the new one is in the
      // session already, so reconnect; otherwise the session really ended.
      this.tokenStillValid().then((ok) => { if (ok) this.conn.restart(); });
      return;
    }
    this.end(reason, detail);
  }

  // ----- conversations ---------------------------------------------------

  conv(id) {
    let c = this.convs.get(id);
    if (!c) {
      c = new Conversation(id, this.me);
      this.convs.set(id, c);
      if (c.isGroup) this.ensureGroup(c.groupID);
      else this.ensureUser(c.peerID);
    }
    return c;
  }

  /** sortedConversations: pinned first, then by newest message. */
  sortedConversations() {
    return [...this.convs.values()]
      .filter((c) => c.listed || c.latest || c === this.current || c.pending.size > 0)
      .sort((a, b) => (b.pinned - a.pinned) || (b.updatedAt - a.updatedAt) || a.id.localeCompare(b.id));
  }

  title(c) {
    if (c.isGroup) {
      const g = this.groups.get(c.groupID);
      return g ? g.name : `Group ${c.groupID.slice(0, 8)}`;
    }
    if (c.peerID === this.me) return `${this.me} (you)`;
    const u = this.users.get(c.peerID);
    return u && u.nickname && u.nickname !== c.peerID ? `${u.nickname} (${c.peerID})` : c.peerID;
  }

  /**
   * nameOf is how a user is shown: their nickname once known (fetched on
   * first sight), else their ID. "you" for the signed-in user.
   */
  nameOf(id) {
    if (!id) return '';
    if (id === this.me) return 'you';
    const u = this.users.get(id);
    if (!u) this.ensureUser(id);
    return u && u.nickname ? u.nickname : id;
  }

  /** onTyping applies a 2103 push: user is (not) typing in a conversation. */
  onTyping(d) {
    if (!d.conversation_id || !d.user_id || d.user_id === this.me) return;
    let m = this.typists.get(d.conversation_id);
    if (!m) this.typists.set(d.conversation_id, (m = new Map()));
    if (d.typing) m.set(d.user_id, Date.now() + TYPING_SHOWN_MS);
    else m.delete(d.user_id);
    this.changed();
    if (d.typing) setTimeout(() => this.changed(), TYPING_SHOWN_MS + 50);
  }

  /** typingIn lists who is typing in c now (nicknames). */
  typingIn(c) {
    const m = c && this.typists.get(c.id);
    if (!m) return [];
    const now = Date.now();
    return [...m].filter(([, until]) => until > now).map(([id]) => this.nameOf(id));
  }

  /** typingNow tells the conversation's members the user is typing (at most every TYPING_EVERY_MS). */
  typingNow() {
    const c = this.current;
    const now = Date.now();
    if (!c || c.left || c.dismissed || now - this.typingSentAt < TYPING_EVERY_MS) return;
    this.typingSentAt = now;
    this.conn.request(Req.TYPING, { conversation_id: c.id, typing: true }).catch(() => {});
  }

  async ensureUser(id) {
    if (!id || this.users.has(id)) return;
    this.users.set(id, { user_id: id });
    try {
      this.users.set(id, await this.api.get(`/user/info?user_id=${encodeURIComponent(id)}`));
      this.changed();
    } catch { /* the ID alone is shown */ }
  }

  async ensureGroup(groupID, force = false) {
    if (!force && this.groups.has(groupID)) return;
    try {
      this.groups.set(groupID, await this.api.get(`/group/info?group_id=${encodeURIComponent(groupID)}`));
      this.changed();
    } catch { /* shown by ID */ }
  }

  /**
   * startSingle opens (creating locally) the chat with userID. Whether the
   * user exists shows at the first send (user_not_found): /user/info answers
   * only for users who already share a conversation or a group with us.
   */
  async startSingle(userID) {
    const c = this.conv(singleConversationID(this.me, userID));
    await this.open(c);
    this.ensureUser(userID);
    return c;
  }

  /** open shows c: loads its newest messages the first time, fills gaps, marks read. */
  async open(c) {
    this.current = c;
    if (this.reading(c)) {
      // Seen now; the read ACK follows once the messages are loaded.
      c.unread = 0;
      c.mentions = 0;
    }
    this.changed();
    // Newer messages come from the SDK's stream; the first open loads the
    // newest page (and the history down to the delivered cursor).
    if (!c.anchored) await this.firstLoad(c);
    if (c.visible().length < 20 && !c.allEarlier) await this.loadEarlier(c);
    if (c.isGroup) this.loadMembers(c.groupID);
    this.scheduleAck(c);
    this.changed();
  }

  /**
   * openAt opens the conversation id and loads earlier pages until seq is
   * held (a search result's message), at most MAX_PAGES_TO_SEQ pages; it
   * returns the conversation.
   */
  async openAt(id, seq) {
    const c = this.conv(id);
    await this.open(c);
    for (let i = 0; i < MAX_PAGES_TO_SEQ && c.anchored && !c.allEarlier && c.lo > seq; i++) {
      const lo = c.lo;
      await this.loadEarlier(c);
      if (c.lo === lo) break; // nothing came: a gap the server cannot fill yet
    }
    return c;
  }

  /** search runs POST /msg/search with q ({keyword, conversation_id?, cursor?, limit?}) and returns its data. */
  search(q) {
    return this.api.post('/msg/search', q);
  }

  /** firstLoad anchors the contiguous run of a conversation opened for the first time. */
  async firstLoad(c) {
    const res = await this.pull(c, { limit: PAGE });
    if (c.anchored) return; // a push or sync anchored it meanwhile
    const msgs = res.messages || [];
    const base = Math.max(c.deliveredSeq, c.readSeq);
    if (msgs.length === 0) {
      c.anchor(res.max_seq || 0);
      c.allEarlier = true;
      return;
    }
    const first = msgs[0].seq;
    // Start the run at our delivered cursor when the page is close to it,
    // so the messages in between are filled and ACKed in order; otherwise
    // at the page (older ones come with "load earlier").
    if (base > 0 && base < first && first - base <= MAX_FILL) c.anchor(base);
    else c.anchor(first - 1);
    this.take(c, msgs, false);
    if (first <= Math.max(res.min_seq || 1, 1)) c.allEarlier = true;
    if (c.gap()) await this.fill(c, first - 1);
  }

  /** loadEarlier pulls the page below the lowest held seq. */
  async loadEarlier(c) {
    if (!c.anchored || c.allEarlier) return;
    const end = c.lo - 1;
    if (end < Math.max(c.minSeq, 1)) {
      c.allEarlier = true;
      this.changed();
      return;
    }
    const res = await this.pull(c, { end_seq: end, limit: PAGE });
    const msgs = res.messages || [];
    this.take(c, msgs, false);
    // A page stops at a seq that is accepted but not saved yet
    // (pending_seqs): there is more below it, "not yet" readable.
    const notYet = (res.pending_seqs || []).length > 0;
    if (!notYet && (msgs.length === 0 || msgs[0].seq <= Math.max(res.min_seq || 1, 1))) c.allEarlier = true;
    this.changed();
  }

  /** pull asks for a window of c's messages by WS 1005 (HTTP when offline). */
  async pull(c, q) {
    const data = { conversation_id: c.id, ...q };
    let res;
    if (this.conn.isOpen) {
      res = await this.conn.request(Req.PULL_RANGE, data);
    } else {
      const p = new URLSearchParams({ conversation_id: c.id });
      for (const [k, v] of Object.entries(q)) p.set(k, String(v));
      res = await this.api.get(`/msg/pull?${p}`);
    }
    if (res.max_seq) c.maxSeq = Math.max(c.maxSeq, res.max_seq);
    if (res.min_seq) c.minSeq = res.min_seq;
    return res;
  }

  /**
   * fill pulls the missing seqs above c.hi up to target (or the highest
   * held seq), page by page; one fill per conversation runs at a time and
   * a request made meanwhile extends it.
   */
  fill(c, target = 0) {
    const f = this.filling.get(c.id);
    if (f) {
      f.target = Math.max(f.target, target);
      return f.done;
    }
    const job = { target };
    job.done = (async () => {
      try {
        for (let round = 0; round < 50; round++) {
          const want = Math.max(job.target, c.highestHeld() - 1, c.gap() ? c.gap()[1] : 0);
          if (!c.anchored || c.hi >= want) break;
          if (want - c.hi > MAX_FILL) {
            // Too far behind to fill in order: keep the newest part.
            for (const s of [...c.msgs.keys()]) if (s <= want - MAX_FILL) c.msgs.delete(s);
            c.anchor(want - MAX_FILL);
            c.allEarlier = false;
          }
          const before = c.hi;
          const res = await this.pull(c, { begin_seq: c.hi + 1, limit: PULL_LIMIT });
          this.take(c, res.messages || [], true);
          if (c.hi === before) {
            // Nothing saved there yet: the page stopped at a seq still in
            // flight (pending_seqs, "not yet"; a placeholder would be
            // "never"). Its push or the next sync brings it; look again
            // in a second in case both were missed.
            if ((res.pending_seqs || []).length) this.retryFill(c);
            break;
          }
        }
      } catch (err) {
        if (!(err instanceof RequestError && err.reason === 'disconnected')) this.notice(`Could not load messages: ${err.message}`, 'error');
      } finally {
        this.filling.delete(c.id);
        this.scheduleAck(c);
        this.changed();
      }
    })();
    this.filling.set(c.id, job);
    return job.done;
  }

  /** retryFill fills c again after PENDING_RETRY_MS, once at a time. */
  retryFill(c) {
    if (this.fillRetries.has(c.id)) return;
    this.fillRetries.set(c.id, setTimeout(() => {
      this.fillRetries.delete(c.id);
      if (c.gap() || c.maxSeq > c.hi) this.fill(c, c.maxSeq);
    }, PENDING_RETRY_MS));
  }

  /** take holds pulled or pushed messages; live marks them as new arrivals (unread, mentions). */
  take(c, msgs, live) {
    for (const m of msgs) {
      const fresh = c.put(m);
      if (!fresh) continue;
      const held = c.msgs.get(m.seq);
      c.noteLatest(held);
      if (isNotification(held)) this.onNotification(c, held);
      // A message is a read receipt of its sender: saving it moved the
      // sender's cursors to its seq (docs/protocol.md, 2101).
      else if (held.sender_id && held.sender_id !== this.me) c.receipt('read', held.sender_id, held.seq);
      if (live && c.countsAsUnread(held) && held.seq > c.readSeq && held.seq > c.listedMax && !this.reading(c)) {
        // The list's counts cover seqs up to its max_seq; newer ones are counted here.
        c.unread++;
        if (c.mentionsMe(held)) c.mentions++;
      }
    }
    if (msgs.length) this.changed();
  }

  /** reading reports whether the user is looking at c right now. */
  reading(c) {
    return this.current === c && document.visibilityState === 'visible';
  }

  // ----- ACKs (contiguous prefix only) -----------------------------------

  scheduleAck(c) {
    if (this.ackTimers.has(c.id)) return;
    this.ackTimers.set(c.id, setTimeout(() => {
      this.ackTimers.delete(c.id);
      this.sendAcks(c);
    }, ACK_DELAY));
  }

  /**
   * sendAcks ACKs c's contiguous prefix: delivered up to hi, read up to hi
   * when the user is looking. Every held seq was issued, so the server
   * takes it (bad_seq is only for seqs above the highest issued).
   */
  async sendAcks(c) {
    const reading = this.reading(c);
    if (reading && (c.unread || c.mentions)) {
      c.unread = 0;
      c.mentions = 0;
      this.changed();
    }
    if (!c.anchored || !this.conn.isOpen || this.unsupported.has('ack')) return;
    const upto = c.hi;
    if (reading && upto > c.readSeq) {
      const prev = c.readSeq;
      c.readSeq = upto;
      c.deliveredSeq = Math.max(c.deliveredSeq, upto);
      await this.ack(c, 'read', upto, () => { c.readSeq = prev; });
    } else if (upto > c.deliveredSeq) {
      const prev = c.deliveredSeq;
      c.deliveredSeq = upto;
      await this.ack(c, 'delivered', upto, () => { c.deliveredSeq = prev; });
    }
  }

  async ack(c, kind, seq, undo) {
    try {
      await this.conn.request(Req.ACK, { ack_type: kind, conversation_id: c.id, seq });
    } catch (err) {
      if (err.reason === 'unknown_request') this.unsupported.add('ack');
      else if (err.reason !== 'bad_seq') undo(); // bad_seq (e.g. a group we left): nothing to retry
    }
  }

  // ----- sending --------------------------------------------------------

  /**
   * send queues a text message in c (an @text when it mentions members:
   * "@user_id" tokens of current members, or "@all") and transmits it.
   */
  send(c, text) {
    const at = c.isGroup ? this.mentionsIn(c, text) : [];
    const m = {
      client_msg_id: newClientMsgID(), conversation_id: c.id, sender_id: this.me, session_type: c.type,
      msg_type: at.length ? MSG_AT_TEXT : MSG_TEXT, content: { text }, at_user_ids: at, status: 'normal',
      state: 'sending', createdAt: Date.now(), local: true,
    };
    if (c.isGroup) m.group_id = c.groupID;
    else m.recv_id = c.peerID;
    c.pending.set(m.client_msg_id, m);
    c.noteLatest(m);
    this.changed();
    this.transmit(c, m);
    return m;
  }

  mentionsIn(c, text) {
    const ids = new Set();
    const members = new Set((this.members.get(c.groupID) || []).map((x) => x.user_id));
    for (const [, id] of text.matchAll(/(?:^|\s)@([A-Za-z0-9_-]{1,64})/g)) {
      if (id === 'all' || (members.has(id) && id !== this.me)) ids.add(id);
    }
    return [...ids];
  }

  /**
   * transmit hands an own message to the SDK, which sends it now or once
   * connected — and again, with the same client_msg_id, after every
   * reconnect — until the server saved it or refused it for good.
   */
  transmit(c, m) {
    m.state = 'sending';
    m.failReason = '';
    this.changed();
    const p = { msgType: m.msg_type, content: m.content, clientMsgId: m.client_msg_id };
    if (m.session_type === GROUP) p.groupId = m.group_id;
    else p.recvId = m.recv_id;
    if (m.at_user_ids && m.at_user_ids.length) p.atUserIds = m.at_user_ids;
    const out = this.conn.send(p);
    out.accepted.then((r) => {
      this.accepted(c, m, { seq: r.seq, server_msg_id: r.serverMsgId, send_at: out.sendAt, ack_type: out.state === 'saved' ? 'saved' : 'accepted' });
    }, () => {});
    out.saved.then(() => {
      if (m.state === 'failed') return;
      m.state = better(m.state, 'saved');
      this.changed();
    }, (err) => {
      // save_failed arrives as a 3001 push too (onSaveFailed).
      if (m.state === 'failed' || err.reason === 'save_failed') return;
      m.state = 'failed';
      m.failReason = err.reason;
      m.failDetail = err.detail;
      this.changed();
    });
  }

  /** retry re-sends a failed message with its client_msg_id. */
  retry(c, m) {
    if (m.state === 'failed') this.transmit(c, m);
  }

  accepted(c, m, ack) {
    if (m.state === 'failed') return;
    m.server_msg_id = ack.server_msg_id;
    m.send_at = ack.send_at;
    m.state = better(m.state === 'sending' ? 'accepted' : m.state, ack.ack_type);
    const held = c.place(m, ack.seq);
    if (held.state === 'saved') c.maxSeq = Math.max(c.maxSeq, ack.seq);
    c.noteLatest(held);
    if (!c.anchored) c.anchor(ack.seq - 1); // a new conversation
    this.scheduleAck(c);
    this.changed();
  }

  /** recall asks the server to revoke own message m (or any, for group owners and admins). */
  async recall(c, m) {
    try {
      await this.conn.request(Req.REVOKE, { conversation_id: c.id, seq: m.seq });
      this.markRevoked(c, m.seq, this.me);
    } catch (err) {
      const why = { revoke_timeout: 'it is too late to recall this message', revoke_not_allowed: 'you may not recall this message' }[err.reason];
      this.notice(`Recall failed: ${why || err.message}`, 'error');
    }
  }

  markRevoked(c, seq, by = '') {
    const m = c.msgs.get(seq);
    if (m && (m.status !== 'revoked' || (by && !m.revokedBy))) {
      m.status = 'revoked';
      if (by) m.revokedBy = by;
      delete m.content;
      this.changed();
    }
  }

  async setPinned(c, pinned) {
    await this.api.call('PUT', '/conversation/update', { conversation_id: c.id, is_pinned: pinned });
    c.pinned = pinned;
    this.changed();
  }
}

// The reconnect/push half and the group half of the client live in their
// own modules (sync.js, groups.js) and are methods of Client.
Object.assign(Client.prototype, SyncMethods, GroupMethods);
