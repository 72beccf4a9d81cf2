// One conversation as the client holds it: messages keyed by seq (so a
// message that arrives twice — by push, resend and pull — is held once),
// the contiguous run of seqs it holds (the only seqs it may ACK), the
// cursors, and its own messages' delivery states.

import { GROUP, MSG_NOTIFICATION_MIN, MSG_REVOKE_NOTIFICATION, parseConversationID, SINGLE } from './ids.js';

/** Delivery states of an own message, in the order they are reached. */
export const STATES = ['failed', 'sending', 'accepted', 'saved', 'delivered', 'read'];
const RANK = Object.fromEntries(STATES.map((s, i) => [s, i]));

/** better returns the later of two pipeline states (never moves back). */
export function better(a, b) {
  if (!a) return b;
  if (!b) return a;
  return RANK[b] > RANK[a] ? b : a;
}

/** Conversation is one conversation's client-side state. */
export class Conversation {
  constructor(id, me) {
    const p = parseConversationID(id) || { type: SINGLE, peers: [me, me] };
    this.id = id;
    this.me = me;
    this.type = p.type;
    this.groupID = p.type === GROUP ? p.groupID : '';
    this.peerID = p.type === SINGLE ? (p.peers[0] === me ? p.peers[1] : p.peers[0]) : '';
    // Server-side figures (conversation list, newest seq, pulls).
    this.maxSeq = 0; // highest seq known to be saved (safe to ACK)
    this.minSeq = 0; // the caller's first visible seq
    this.readSeq = 0; // my read cursor
    this.deliveredSeq = 0; // my delivered cursor
    this.unread = 0;
    this.mentions = 0;
    this.listedMax = 0; // the max_seq the last conversation list counted unread up to
    this.pinned = false;
    this.recvMsgOpt = 0;
    this.updatedAt = 0;
    this.latest = null;
    this.listed = false; // the server's conversation list named it
    // Held messages: seq → message. lo..hi is the contiguous run: every
    // seq from lo to hi is held (placeholders included); messages above
    // hi wait for the gap below them to be filled.
    this.msgs = new Map();
    this.lo = 0;
    this.hi = null; // null: not anchored yet, nothing to ACK
    this.allEarlier = false;
    // Own messages without a seq yet (sending, or failed before accept).
    this.pending = new Map();
    // Receipts: the peer's cursors (single chat), readers' cursors (group).
    this.peerDelivered = 0;
    this.peerRead = 0;
    this.readers = new Map();
    // Group facts learned from /group/* and notifications.
    this.left = false;
    this.dismissed = false;
  }

  get isGroup() { return this.type === GROUP; }
  get anchored() { return this.hi !== null; }

  /** anchor starts the contiguous run just above seq (nothing held below). */
  anchor(seq) {
    this.hi = seq;
    this.lo = seq + 1;
    this.advance();
  }

  /** advance moves hi over every held seq directly above it. */
  advance() {
    if (this.hi === null) return;
    while (this.msgs.has(this.hi + 1)) this.hi++;
  }

  /** highestHeld is the largest held seq (0 when none). */
  highestHeld() {
    let max = 0;
    for (const s of this.msgs.keys()) if (s > max) max = s;
    return max;
  }

  /** gap is the first missing seq range [from, to] above hi, or null. */
  gap() {
    if (this.hi === null) return null;
    const top = this.highestHeld();
    if (top <= this.hi + 1) return null;
    return [this.hi + 1, top - 1];
  }

  /**
   * put holds m (a pulled or pushed message, or a placeholder) and returns
   * true when it is new to the client (not a repeat of a held seq). A real
   * message replaces a placeholder; an own message keeps its local state;
   * a recall is never undone by a stale copy.
   */
  put(m) {
    if (!(m.seq > 0)) return false;
    const old = this.msgs.get(m.seq);
    if (m.status !== 'unavailable' && m.conversation_id === undefined) m.conversation_id = this.id;
    if (!old) {
      const own = m.sender_id === this.me && m.client_msg_id ? this.pending.get(m.client_msg_id) : null;
      if (own) {
        this.pending.delete(m.client_msg_id);
        Object.assign(own, m, { state: better(own.state, 'saved') });
        this.msgs.set(m.seq, own);
      } else {
        if (m.sender_id === this.me && m.status !== 'unavailable') m.state = m.state || 'saved';
        this.msgs.set(m.seq, m);
      }
      if (m.seq >= this.lo && this.hi !== null) this.advance();
      if (m.seq < this.lo) this.lo = m.seq;
      return m.status !== 'unavailable';
    }
    if (old.status === 'unavailable' && m.status !== 'unavailable') {
      this.msgs.set(m.seq, m);
      if (m.sender_id === this.me) m.state = m.state || 'saved';
      return true;
    }
    if (m.status === 'revoked' && old.status !== 'revoked') {
      old.status = 'revoked';
      delete old.content;
    }
    if (old.state && m.sender_id === this.me && m.status !== 'unavailable') old.state = better(old.state, 'saved');
    return false;
  }

  /** own finds an own message by client_msg_id, held or pending. */
  own(clientMsgID) {
    if (this.pending.has(clientMsgID)) return this.pending.get(clientMsgID);
    for (const m of this.msgs.values()) if (m.client_msg_id === clientMsgID && m.sender_id === this.me) return m;
    return null;
  }

  /** place moves an own message from pending to its (new) seq. */
  place(m, seq) {
    if (m.seq && this.msgs.get(m.seq) === m && m.seq !== seq) {
      // The save stage resolved a seq collision and named a new seq: the
      // old one is a gap now.
      this.msgs.set(m.seq, { seq: m.seq, status: 'unavailable' });
    }
    this.pending.delete(m.client_msg_id);
    m.seq = seq;
    const held = this.msgs.get(seq);
    if (held && held !== m && held.status !== 'unavailable') {
      // A pull or push brought the saved copy first: keep one object.
      Object.assign(held, { state: better(held.state, m.state), local: true });
      return held;
    }
    this.msgs.set(seq, m);
    if (seq < this.lo) this.lo = seq;
    this.advance();
    return m;
  }

  /** unplace takes a failed own message out of its seq (the seq reads as unavailable now). */
  unplace(m) {
    if (m.seq && this.msgs.get(m.seq) === m) this.msgs.set(m.seq, { seq: m.seq, status: 'unavailable' });
    m.seq = 0;
    this.pending.set(m.client_msg_id, m);
  }

  /**
   * stateOf is what an own message shows: its pipeline state, raised to
   * delivered or read by the receipts (the peer's cursors in single chat;
   * in a group, the pushed read count (2104) or any reader's cursor).
   */
  stateOf(m) {
    if (m.state === 'failed' || m.state === 'sending' || !m.seq) return m.state || 'sending';
    let s = m.state || 'saved';
    if (this.type === SINGLE && this.peerID !== this.me) {
      if (m.seq <= this.peerRead) return 'read';
      if (m.seq <= this.peerDelivered) s = better(s, 'delivered');
    } else if (this.readersOf(m) > 0) {
      return 'read';
    }
    return s;
  }

  /**
   * readersOf counts group members who read m (not me): the server's read
   * count of m (2104, m.readCount), or the readers whose cursor this client
   * saw cover m (per-reader receipts, messages as receipts), whichever is
   * higher — both only ever grow.
   */
  readersOf(m) {
    let n = 0;
    for (const [user, seq] of this.readers) if (user !== this.me && seq >= m.seq) n++;
    return Math.max(n, m.readCount || 0);
  }

  /** receipt applies a 2101 delivered/read push from user about seq. */
  receipt(kind, user, seq) {
    if (user === this.me) return;
    if (this.type === SINGLE) {
      if (kind === 'read') this.peerRead = Math.max(this.peerRead, seq);
      this.peerDelivered = Math.max(this.peerDelivered, seq);
    } else if (kind === 'read') {
      this.readers.set(user, Math.max(this.readers.get(user) || 0, seq));
    }
  }

  /** visible returns the messages to show, ascending: held seqs, then own messages without one. */
  visible() {
    // A recall's announcement changes the recalled message; it is not shown itself.
    // Action notices (1601–1604) change the messages they name; a message
    // deleted for oneself is hidden.
    const held = [...this.msgs.values()].filter((m) => m.status !== 'unavailable' && !m.hidden && !isActionNotice(m));
    held.sort((a, b) => a.seq - b.seq);
    const pending = [...this.pending.values()].sort((a, b) => a.createdAt - b.createdAt);
    return held.concat(pending);
  }

  /** noteLatest keeps m as the preview when it is the newest. */
  noteLatest(m) {
    if (m.status === 'unavailable') return;
    if (!this.latest || (m.seq || Infinity) >= (this.latest.seq || 0)) {
      this.latest = m;
      this.updatedAt = Math.max(this.updatedAt, m.send_at || Date.now());
    }
  }

  /** countsAsUnread: a readable message from someone else (what the server's unread_count counts). */
  countsAsUnread(m) {
    return m.sender_id !== this.me && m.status === 'normal' && !isNotification(m);
  }

  /** mentionsMe reports whether m @-mentions me (or everyone). */
  mentionsMe(m) {
    const at = m.at_user_ids || [];
    return m.sender_id !== this.me && (at.includes(this.me) || at.includes('all'));
  }
}

/** isActionNotice reports whether m announces a recall, edit, reaction or delete (1600–1604): not shown itself. */
export function isActionNotice(m) {
  return (m.msg_type || 0) >= MSG_REVOKE_NOTIFICATION && (m.msg_type || 0) <= MSG_REVOKE_NOTIFICATION + 4;
}

/** isNotification reports whether m is a server notification (msg_type 1500+). */
export function isNotification(m) {
  return (m.msg_type || 0) >= MSG_NOTIFICATION_MIN;
}

/** notificationBody parses a notification's content.custom (an object or JSON text). */
export function notificationBody(m) {
  const x = m.content && m.content.custom;
  if (!x) return null;
  if (typeof x === 'object') return x;
  try {
    return JSON.parse(x);
  } catch {
    return null;
  }
}
