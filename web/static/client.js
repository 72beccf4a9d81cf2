// The chat client without its view: conversations, sending with delivery
// states, history pages, read marks, receipts, recall and groups. The
// protocol (frames, resend, gap filling, delivered ACKs) is the SDK's
// (socket.js); this is the page's model of what it shows. The view
// subscribes with onChange and reads the state it needs.

import { isAuthLost } from './api.js';
import { Connection } from './socket.js';
import { Conversation, better, isNotification } from './conversation.js';
import { GROUP, MSG_AT_TEXT, MSG_FILE, MSG_PICTURE, MSG_TEXT, groupConversationID, newClientMsgID, singleConversationID } from './ids.js';
import { SyncMethods } from './sync.js';
import { GroupMethods } from './groups.js';

/** PAGE is how many messages one "load earlier" or first open asks for. */
export const PAGE = 50;
/** MAX_PAGES_TO_SEQ bounds the pages openAt loads to reach an old message (PAGE each). */
const MAX_PAGES_TO_SEQ = 40;
/** ACK_DELAY coalesces the read marks of a burst into one per conversation. */
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
    this.urls = new Map(); // object_id:variant → {url, expires_at}
    this.urlLoads = new Set();
    this.changeQueued = false;
    this.conn = new Connection(() => this.api.session.token, () => this.me, {
      open: () => this.onOpen(),
      ready: () => this.adoptPending(),
      message: (m) => this.onMessage(m),
      receipt: (e) => this.onReceipt(e),
      typing: (e) => this.onTyping(e),
      action: (name, e) => this.onAction(name, e),
      serverError: (err) => this.notice(`Server: ${err.reason}${err.detail ? ` — ${err.detail}` : ''}`, 'error'),
      state: (s, info) => { this.status = { state: s, ...info }; this.changed(); },
      gate: (reason, detail) => this.onGate(reason, detail),
    });
    /** The SDK's client (docs/sdk.md): history, markRead, typing, recall, send. */
    this.sdk = this.conn.sdk;
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
    if (!u || u.retryAt) this.ensureUser(id);
    return u && u.nickname ? u.nickname : id;
  }

  /** onTyping applies the SDK's typing event {conversationId, userId, typing}. */
  onTyping(d) {
    if (!d.conversationId || !d.userId || d.userId === this.me) return;
    let m = this.typists.get(d.conversationId);
    if (!m) this.typists.set(d.conversationId, (m = new Map()));
    if (d.typing) m.set(d.userId, Date.now() + TYPING_SHOWN_MS);
    else m.delete(d.userId);
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
    this.sdk.typing(c.id, true).catch(() => {});
  }

  /**
   * ensureUser fetches id's profile once. A failed fetch (not visible yet,
   * rate-limited, offline) is tried again at a later render, after 1 s,
   * 2 s, 4 s … up to a minute, so a nickname shown as an ID early (say,
   * before the group that makes the user visible existed) is corrected.
   */
  async ensureUser(id) {
    if (!id) return;
    const known = this.users.get(id);
    if (known && !(known.retryAt && Date.now() >= known.retryAt)) return;
    const failures = known ? known.failures || 0 : 0;
    const wait = Math.min(60000, 1000 * 2 ** failures);
    this.users.set(id, { user_id: id, failures: failures + 1, retryAt: Date.now() + wait });
    try {
      this.users.set(id, await this.api.get(`/user/info?user_id=${encodeURIComponent(id)}`));
      this.changed();
    } catch {
      setTimeout(() => this.changed(), wait + 10); // a render that asks again
    }
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
    // history page right below where that stream starts.
    if (!c.historyLoaded) await this.firstLoad(c);
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

  /**
   * firstLoad loads the history page that ends where the SDK's message
   * stream starts (sdk.history): with the stream it is one contiguous run.
   */
  async firstLoad(c) {
    const page = await this.sdk.history(c.id, { limit: PAGE });
    if (c.historyLoaded) return;
    c.historyLoaded = true;
    if (!c.anchored) c.anchor(page.end);
    this.takePage(c, page);
  }

  /** loadEarlier loads the history page below the lowest held seq. */
  async loadEarlier(c) {
    if (!c.historyLoaded) return this.firstLoad(c);
    if (!c.anchored || c.allEarlier) return undefined;
    this.takePage(c, await this.sdk.history(c.id, { before: c.lo, limit: PAGE }));
    this.changed();
    return undefined;
  }

  /** takePage holds a history page. */
  takePage(c, page) {
    if (page.maxSeq) c.maxSeq = Math.max(c.maxSeq, page.maxSeq);
    if (page.minSeq) c.minSeq = page.minSeq;
    this.take(c, page.messages, false);
    if (!page.hasMore) c.allEarlier = true;
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
   * sendAcks marks c read up to its contiguous run's top when the user is
   * looking (sdk.markRead). Delivered ACKs are the SDK's: it ACKs the
   * prefix of its stream, which is this run's top.
   */
  async sendAcks(c) {
    const reading = this.reading(c);
    if (reading && (c.unread || c.mentions)) {
      c.unread = 0;
      c.mentions = 0;
      this.changed();
    }
    if (!c.anchored) return;
    const upto = c.hi;
    c.deliveredSeq = Math.max(c.deliveredSeq, upto);
    if (!reading || upto <= c.readSeq || !this.conn.isOpen) return;
    const prev = c.readSeq;
    c.readSeq = upto;
    try {
      await this.sdk.markRead(c.id, upto);
    } catch (err) {
      if (err.reason !== 'bad_seq') c.readSeq = prev; // bad_seq (e.g. a group we left): nothing to retry
    }
  }

  // ----- sending --------------------------------------------------------

  /**
   * send queues a text message in c (an @text when it mentions members:
   * "@user_id" tokens of current members, or "@all") and transmits it.
   */
  send(c, text, quote = null) {
    const at = c.isGroup ? this.mentionsIn(c, text) : [];
    const m = {
      client_msg_id: newClientMsgID(), conversation_id: c.id, sender_id: this.me, session_type: c.type,
      msg_type: at.length ? MSG_AT_TEXT : MSG_TEXT, content: { text }, at_user_ids: at, status: 'normal',
      state: 'sending', createdAt: Date.now(), local: true,
    };
    if (quote) m.quote = quote;
    if (c.isGroup) m.group_id = c.groupID;
    else m.recv_id = c.peerID;
    c.pending.set(m.client_msg_id, m);
    c.noteLatest(m);
    this.changed();
    this.transmit(c, m);
    return m;
  }

  /**
   * sendFile uploads file (sdk.upload, with progress on m.upload) and sends
   * it by reference: a picture (102) for images, else a file (105). The
   * message shows as sending with a progress bar meanwhile.
   */
  async sendFile(c, file) {
    const image = /^image\/(png|jpeg|gif|webp)$/.test(file.type);
    const m = {
      client_msg_id: newClientMsgID(), conversation_id: c.id, sender_id: this.me, session_type: c.type,
      msg_type: image ? MSG_PICTURE : MSG_FILE, content: {}, status: 'normal', state: 'sending', createdAt: Date.now(), local: true,
      upload: { sent: 0, total: file.size, name: file.name || 'file' },
    };
    if (c.isGroup) m.group_id = c.groupID;
    else m.recv_id = c.peerID;
    c.pending.set(m.client_msg_id, m);
    c.noteLatest(m);
    return this.uploadAndSend(c, m, file, image);
  }

  /** uploadAndSend uploads file for m (again after a failed upload) and sends it. */
  async uploadAndSend(c, m, file, image) {
    m.file = file;
    m.uploadFailed = false;
    m.state = 'sending';
    m.failReason = '';
    m.upload = { sent: 0, total: file.size, name: file.name || 'file' };
    this.changed();
    let obj;
    try {
      obj = await this.sdk.upload(file, {
        name: file.name || (image ? 'pasted-image' : 'file'),
        onProgress: (sent, total) => { m.upload = { ...m.upload, sent, total }; this.changed(); },
      });
    } catch (err) {
      m.upload = null;
      m.state = 'failed';
      m.failReason = err.reason || 'upload_failed';
      m.failDetail = err.detail || '';
      m.uploadFailed = true;
      this.changed();
      return m;
    }
    m.upload = null;
    m.file = null;
    // A reference holds only object_id (docs/media.md); the metadata the
    // upload answered is what this page shows until the saved copy comes.
    const field = image ? 'image' : 'file';
    m.sendContent = { [field]: { object_id: obj.object_id } };
    m.content = { [field]: { ...obj } };
    this.transmit(c, m);
    return m;
  }

  /**
   * objectURL resolves a signed URL of an object's variant, kept until a
   * minute before it expires (GET /object/url through the SDK).
   */
  async objectURL(objectID, variant) {
    const key = `${objectID}:${variant}`;
    const hit = this.urls.get(key);
    if (hit && hit.expires_at - 60000 > Date.now()) return hit.url;
    const got = await this.sdk.objectUrl(objectID, variant);
    this.urls.set(key, got);
    return got.url;
  }

  /** urlFor is objectURL for rendering: the URL when known, else '' and a fetch that redraws. */
  urlFor(objectID, variant) {
    const key = `${objectID}:${variant}`;
    const hit = this.urls.get(key);
    if (hit && hit.expires_at - 60000 > Date.now()) return hit.url;
    if (!this.urlLoads.has(key)) {
      this.urlLoads.add(key);
      // Right after the send the receivers may get object_access_denied
      // for a moment (docs/media.md): try again a few times.
      const attempt = (n) => this.objectURL(objectID, variant).then(() => { this.urlLoads.delete(key); this.changed(); }, (err) => {
        if (n < 5 && err.reason === 'object_access_denied') setTimeout(() => attempt(n + 1), 300 * (n + 1));
        else this.urlLoads.delete(key);
      });
      attempt(0);
    }
    return '';
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
    const p = { msgType: m.msg_type, content: m.sendContent || m.content, clientMsgId: m.client_msg_id };
    if (m.session_type === GROUP) p.groupId = m.group_id;
    else p.recvId = m.recv_id;
    if (m.at_user_ids && m.at_user_ids.length) p.atUserIds = m.at_user_ids;
    if (m.quote) p.quote = { seq: m.quote.seq };
    this.track(c, m, this.conn.send(p));
  }

  /** track follows the SDK's OutgoingMessage out of own message m in c. */
  track(c, m, out) {
    out.accepted.then((r) => {
      this.accepted(c, m, { seq: r.seq, server_msg_id: r.serverMsgId, send_at: out.sendAt, ack_type: out.state === 'saved' ? 'saved' : 'accepted' });
    }, () => {});
    out.saved.then(() => {
      if (m.state === 'failed') return;
      m.state = better(m.state, 'saved');
      this.changed();
    }, (err) => {
      if (m.state === 'failed') return;
      // save_failed: the seq it was given reads as unavailable now.
      if (err.reason === 'save_failed') c.unplace(m);
      m.state = 'failed';
      m.failReason = err.reason;
      m.failDetail = err.reason === 'save_failed' ? 'the server could not store the message' : err.detail;
      this.changed();
    });
  }

  /**
   * adoptPending shows the own messages the SDK's outbox brought back from
   * a previous page (a reload): the SDK resends them; the page shows their
   * states like any own message.
   */
  adoptPending() {
    for (const out of this.sdk.pendingMessages()) {
      const b = out.body;
      const id = out.conversationId || (b.group_id ? groupConversationID(b.group_id) : singleConversationID(this.me, b.recv_id));
      const c = this.conv(id);
      if (c.own(out.clientMsgId)) continue;
      const m = {
        client_msg_id: out.clientMsgId, conversation_id: id, sender_id: this.me, session_type: b.session_type,
        msg_type: b.msg_type, content: b.content, at_user_ids: b.at_user_ids || [], status: 'normal',
        state: 'sending', createdAt: out.createdAt, local: true,
      };
      if (b.group_id) m.group_id = b.group_id;
      else m.recv_id = b.recv_id;
      c.pending.set(m.client_msg_id, m);
      c.noteLatest(m);
      this.track(c, m, out);
    }
    this.changed();
  }

  /** retry re-sends a failed message with its client_msg_id. */
  retry(c, m) {
    if (m.state === 'failed' && m.uploadFailed) {
      this.uploadAndSend(c, m, m.file, m.msg_type === MSG_PICTURE);
      return;
    }
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
      await this.sdk.recall(c.id, m.seq);
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

  // ----- message actions (docs/actions.md) ---------------------------------

  /** editMessage replaces own text message m's text (sdk.edit); the edit event confirms it everywhere. */
  async editMessage(c, m, text) {
    const res = await this.sdk.edit(c.id, m.seq, { text });
    const v = res.edit_version || (m.edit_version || 0) + 1;
    if (v > (m.edit_version || 0)) {
      m.content = { ...(m.content || {}), text };
      m.edit_version = v;
      m.edited_at = res.edited_at || Date.now();
    }
    this.changed();
  }

  /** toggleReaction adds emoji to m, or takes it back when the user has it on m already. */
  async toggleReaction(c, m, emoji) {
    const mine = (m.reactions || []).some((r) => r.emoji === emoji && r.me);
    await this.sdk.react(c.id, m.seq, emoji, mine ? 'remove' : 'add');
  }

  /** deleteMessage deletes m for the user's devices ('self') or for everyone. */
  async deleteMessage(c, m, scope) {
    await this.sdk.deleteMessages(c.id, [m.seq], scope);
    this.applyDelete(c, [m.seq], scope);
  }

  /** readBy lists who read m: {read_user_ids, unread_user_ids, read_count, member_count}. */
  readBy(c, m) {
    return this.sdk.readBy(c.id, m.seq);
  }

  applyDelete(c, seqs, scope) {
    for (const seq of seqs) {
      const m = c.msgs.get(seq);
      if (!m) continue;
      if (scope === 'self') m.hidden = true;
      else {
        m.status = 'deleted';
        delete m.content;
        delete m.reactions;
        delete m.quote;
      }
    }
    this.changed();
  }

  /** onAction applies the SDK's edit, reaction, delete and readCounts events to the held messages. */
  onAction(name, e) {
    const c = this.conv(e.conversationId);
    if (name === 'readCounts') {
      for (const x of e.counts) {
        const m = c.msgs.get(x.seq);
        if (m) m.readCount = Math.max(m.readCount || 0, x.read_count || 0);
      }
    } else if (name === 'delete') {
      this.applyDelete(c, e.seqs, e.scope);
    } else {
      const m = c.msgs.get(e.seq);
      if (!m || m.status !== 'normal') return;
      if (name === 'edit' && e.editVersion > (m.edit_version || 0)) {
        m.content = { ...(m.content || {}), ...e.content };
        m.edit_version = e.editVersion;
        m.edited_at = e.editedAt;
      } else if (name === 'reaction') {
        const list = (m.reactions || []).filter((r) => r.emoji !== e.emoji);
        const old = (m.reactions || []).find((r) => r.emoji === e.emoji);
        const me = e.userId === this.me ? e.op === 'add' : !!(old && old.me);
        if (e.count > 0) list.push({ emoji: e.emoji, count: e.count, me });
        m.reactions = list;
      }
    }
    this.changed();
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
