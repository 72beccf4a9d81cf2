// NexoClient: one user's connection to a Nexo server — connect with a
// token, reconnect with backoff, two-phase sends resent until saved, and
// every conversation's messages delivered once, in seq order, gaps filled.
// docs/protocol.md and docs/sync.md are the contract; docs/sdk.md the guide.

import { backoffDelay } from './backoff.js';
import { Emitter } from './emitter.js';
import { HttpApi } from './http.js';
import { OutgoingMessage } from './message.js';
import { MemoryOutbox, applyOutboxOps } from './outbox.js';
import {
  CloseCode, GATE_REASONS, MsgType, NexoError, Push, RETRYABLE_SEND_REASONS, Req, SessionType, TOKEN_REASONS,
  groupConversationID, newClientMsgID,
} from './protocol.js';

/** @typedef {import('./outbox.js').Outbox} Outbox */
/** @typedef {import('./outbox.js').OutboxRecord} OutboxRecord */
/** @typedef {import('./outbox.js').OutboxOp} OutboxOp */
/** @typedef {import('./outbox.js').SendBody} SendBody */
/** @typedef {import('./message.js').SendResult} SendResult */

/** @typedef {'disconnected' | 'connecting' | 'connected'} ConnectionState */

/**
 * @typedef {object} Logger  where the SDK reports what it does (console fits)
 * @property {(...args: any[]) => void} [debug]
 * @property {(...args: any[]) => void} [info]
 * @property {(...args: any[]) => void} [warn]
 * @property {(...args: any[]) => void} [error]
 */

/**
 * @typedef {object} NexoClientOptions
 * @property {string} url  the server's HTTP base ("https://chat.example.com"); the WebSocket is {url}/ws
 * @property {(hint?: {reason: string}) => string | Promise<string>} getToken
 *   the access token (POST /auth/login). Called before every connection
 *   attempt and HTTP call without a token yet; `hint.reason` (token_expired,
 *   session_invalid, token_revoked, …) says the last one was refused: return a fresh one.
 * @property {number} platformId  the token's platform (5 web, 1 iOS, 2 Android, …)
 * @property {any} [WebSocket]  a WebSocket constructor (default globalThis.WebSocket; in Node 20 pass the `ws` package's)
 * @property {Outbox} [outbox]  where unsaved messages wait (default a MemoryOutbox; IndexedDBOutbox in browsers survives reloads)
 * @property {Logger} [logger]  default silent
 * @property {number} [minReconnectDelay]  first backoff window in ms (default 500)
 * @property {number} [maxReconnectDelay]  backoff cap in ms (default 30000)
 * @property {number} [requestTimeout]  ms to wait for a response (default 15000)
 * @property {number} [pingInterval]  ms between application pings (default 25000)
 * @property {number} [pongTimeout]  ms without any frame after a ping before the connection counts as dead (default 10000)
 * @property {number} [sendWindow]  new messages in flight at once (default 1: strict send order even when the server refuses one for a while)
 * @property {boolean} [autoAckDelivered]  ACK `delivered` for the contiguous prefix emitted (default true)
 * @property {boolean} [emitPlaceholders]  emit unavailable seqs as placeholder messages (default true; false skips them silently)
 * @property {number} [pendingRetryDelay]  ms before pulling again a seq still in flight on the server (default 1000)
 * @property {boolean} [stream]  false: no message stream (no sync, no "message" events, no delivered ACKs) for an app
 *   that orders pushes itself from "push" events (default true)
 * @property {number} [syncTimeout]  ms to wait for the newest seqs after a connect before messages flow without them (default 5000)
 * @property {typeof fetch} [fetch]  default globalThis.fetch
 * @property {() => number} [random]  uniform [0, 1) for jitter (tests)
 */

/**
 * @typedef {object} Message  a message as the server pushes and pulls it (docs/protocol.md, 2001)
 * @property {string} conversation_id
 * @property {number} seq
 * @property {'normal' | 'revoked' | 'deleted' | 'unavailable'} status  unavailable: a placeholder, the seq will never hold a message; deleted: a tombstone
 * @property {string} [server_msg_id]
 * @property {string} [client_msg_id]
 * @property {string} [sender_id]
 * @property {string} [recv_id]
 * @property {string} [group_id]
 * @property {number} [session_type]
 * @property {number} [msg_type]
 * @property {Record<string, any>} [content]
 * @property {string[]} [at_user_ids]
 * @property {number} [send_at]
 * @property {number} [edit_version]  an edited message's version (pulls)
 * @property {number} [edited_at]
 * @property {Array<{emoji: string, count: number, me: boolean}>} [reactions]  (pulls)
 * @property {{seq: number, sender_id?: string, msg_type?: number, preview?: string, status?: string}} [quote]  the quoted message's snapshot
 */

/** @typedef {{conversationId: string, userId: string, ackType: 'delivered' | 'read', seq: number}} ReceiptEvent */
/** @typedef {{conversationId: string, userId: string, typing: boolean}} TypingEvent */
/** @typedef {{conversationId: string, seq: number, serverMsgId: string, senderId: string, revokerId: string, revokedAt: number, notification: Message}} RecallEvent */
/** @typedef {{reason: string, detail: string}} KickedEvent */
/** @typedef {{conversationId: string, seq: number, editorId: string, editVersion: number, editedAt: number, content: Record<string, any>, notification: Message}} EditEvent  an edit (1601): show `content` when editVersion is above the one held */
/** @typedef {{conversationId: string, seq: number, userId: string, emoji: string, op: 'add' | 'remove', count: number, notification: Message}} ReactionEvent  a reaction (1602): `count` is the emoji's count after the change */
/** @typedef {{conversationId: string, seqs: number[], scope: 'everyone' | 'self', deleterId: string, deletedAt: number, notification: Message}} DeleteEvent  a delete (1603 everyone: tombstones; 1604 self: hide them) */
/** @typedef {{conversationId: string, counts: Array<{seq: number, read_count: number, member_count: number}>}} ReadCountsEvent  read counts of the user's own group messages (2104) */

/**
 * @typedef {object} ClientEvents
 * @property {ConnectionState} state
 * @property {Message} message   each message once, per conversation in seq order (placeholders included)
 * @property {ReceiptEvent} receipt
 * @property {TypingEvent} typing
 * @property {RecallEvent} recall
 * @property {KickedEvent} kicked
 * @property {EditEvent} edit    after its 1601 "message"
 * @property {ReactionEvent} reaction  after its 1602 "message"
 * @property {DeleteEvent} delete  after its 1603/1604 "message"
 * @property {ReadCountsEvent} readCounts
 * @property {Message} group     a group notification (msg_type 1500–1599 in a group), after its "message"
 * @property {NexoError} error   a failure the SDK cannot attach to a call (sync, the session ended, a 3001 error push that answers no request)
 * @property {ReconnectingEvent} reconnecting  a reconnect is scheduled after `delay` ms
 * @property {any} push          every push frame (2xxx, 3001) as it arrived, before the SDK handles it
 */

/** @typedef {{delay: number, attempt: number}} ReconnectingEvent */

/**
 * @typedef {object} SendParams
 * @property {string} [recvId]   the peer of a single chat (exactly one of recvId, groupId)
 * @property {string} [groupId]
 * @property {number} msgType    101 text, 102 picture, 103 voice, 104 video, 105 file, 106 at-text (mentions), 110 custom
 * @property {Record<string, any>} content  the message body, e.g. text: "hi" for 101
 * @property {string} [clientMsgId]  default a new random ID; reuse one only to retry the same message
 * @property {{seq: number}} [quote]  reply to this seq of the same conversation (the server stores a snapshot; quote_unavailable when the caller cannot see it)
 * @property {string[]} [atUserIds]
 */

/**
 * @typedef {object} PullResult
 * @property {Message[]} messages  ascending by seq; placeholders for unavailable seqs
 * @property {number} minSeq
 * @property {number} maxSeq
 * @property {number[]} pendingSeqs  seqs accepted but not saved yet ("not yet")
 */

/**
 * @typedef {object} HistoryPage
 * @property {Message[]} messages  ascending by seq, all at or below the page's `end`; placeholders for unavailable seqs
 * @property {number} end  the highest seq the page covers (0: nothing to show)
 * @property {boolean} hasMore  false once the page reaches the caller's first visible seq (min_seq)
 * @property {number} minSeq
 * @property {number} maxSeq
 */

/** Per-conversation ordering state. */
class Timeline {
  /** @param {string} id */
  constructor(id) {
    this.id = id;
    /** whether hi is known; before, arrivals wait in `buffer` */
    this.anchored = false;
    /** every seq ≤ hi has been emitted (or skipped) */
    this.hi = 0;
    /** seqs ≤ start are history (client.history), above it the stream */
    this.start = 0;
    this.maxSeq = 0;
    /** @type {Map<number, Message | null>} seq → message waiting for the seqs below it; null: an own message (not emitted) */
    this.buffer = new Map();
    this.filling = false;
    this.fillAgain = false;
    /** @type {any} */
    this.retryTimer = 0;
    /** @type {any} */
    this.ackTimer = 0;
    this.acked = 0;
  }
}

const noop = () => {};
const ACK_DELAY = 150;
const PULL_LIMIT = 100;

/**
 * NexoClient is one user's session with a Nexo server. Events (on): state,
 * message, receipt, typing, recall, edit, reaction, delete, readCounts, kicked, group, error.
 * @extends {Emitter<ClientEvents>}
 */
export class NexoClient extends Emitter {
  /** @param {NexoClientOptions} opts */
  constructor(opts) {
    super();
    if (!opts || !opts.url || typeof opts.getToken !== 'function' || !opts.platformId) {
      throw new TypeError('NexoClient: url, getToken and platformId are required');
    }
    this.url = opts.url.replace(/\/+$/, '');
    this.getToken = opts.getToken;
    this.platformId = opts.platformId;
    this.WebSocketImpl = opts.WebSocket || globalThis.WebSocket;
    if (!this.WebSocketImpl) throw new TypeError('NexoClient: no WebSocket in this environment; pass opts.WebSocket');
    /** Where unsaved messages wait. @type {Outbox} */
    this.outbox = opts.outbox || new MemoryOutbox();
    const log = opts.logger || {};
    this.log = { debug: (log.debug || noop).bind(log), info: (log.info || noop).bind(log), warn: (log.warn || noop).bind(log), error: (log.error || noop).bind(log) };
    this.minReconnectDelay = opts.minReconnectDelay ?? 500;
    this.maxReconnectDelay = opts.maxReconnectDelay ?? 30000;
    this.requestTimeout = opts.requestTimeout ?? 15000;
    this.pingInterval = opts.pingInterval ?? 25000;
    this.pongTimeout = opts.pongTimeout ?? 10000;
    this.sendWindow = Math.max(1, opts.sendWindow ?? 1);
    this.autoAckDelivered = opts.autoAckDelivered ?? true;
    this.emitPlaceholders = opts.emitPlaceholders ?? true;
    this.pendingRetryDelay = opts.pendingRetryDelay ?? 1000;
    this.syncTimeout = opts.syncTimeout ?? 5000;
    this.stream = opts.stream ?? true;
    this.random = opts.random || Math.random;
    /** The HTTP routes: users, presence, groups, conversations, search (and what later features add). */
    this.http = new HttpApi({ url: this.url, token: (hint) => this._httpToken(hint), fetch: opts.fetch });

    /** The connection's state; every change is a "state" event. @type {ConnectionState} */
    this.state = 'disconnected';
    /** The signed-in user, read from the token ('' before the first connect). @type {string} */
    this.userId = '';
    /** The token in use (the last getToken() answer). @type {string} */
    this.token = '';
    /** @type {any} */
    this.ws = null;
    this._wanted = false;
    this._gen = 0;
    this._attempt = 0;
    this._authFailures = 0;
    /** @type {string} why the next getToken() is asked for a fresh token */
    this._tokenHint = '';
    /** @type {any} */
    this._timer = 0;
    /** @type {any} */
    this._pingTimer = 0;
    /** @type {any} */
    this._pongTimer = 0;
    this._lastHeard = 0;
    this._incr = 0;
    /** @type {Map<string, {resolve: (d: any) => void, reject: (e: Error) => void, timer: any}>} */
    this._waiting = new Map();
    /** @type {{reason: string, detail: string} | null} the gate frame before a close */
    this._gate = null;
    /** @type {Array<{resolve: () => void, reject: (e: Error) => void}>} */
    this._connectWaiters = [];

    /** @type {Map<string, Timeline>} */
    this._convs = new Map();
    this._synced = false;
    /** @type {Array<() => void>} history calls waiting for the first sync */
    this._syncWaiters = [];
    /** the last sync had no cursors: new conversations start at their first seq seen */
    this._cursorless = false;

    /** @type {Map<string, OutgoingMessage>} every message not yet saved or failed, by clientMsgId */
    this._outgoing = new Map();
    /** @type {string[]} clientMsgIds of pending (unaccepted) messages, in send order */
    this._queue = [];
    /** @type {Set<string>} clientMsgIds of requests on the wire */
    this._inFlight = new Set();
    /** @type {Set<string>} clientMsgIds this client sent (theirs are not emitted as "message") */
    this._ownIds = new Set();
    this._pausedUntil = 0;
    /** @type {any} */
    this._pauseTimer = 0;
    this._order = 0;
    /** @type {Promise<void>} serialises outbox writes */
    this._outboxChain = Promise.resolve();
    /** @type {OutboxOp[]} writes waiting for the next outbox flush */
    this._outboxPending = [];
    /** @type {Promise<void> | null} */
    this._outboxLoaded = null;
  }

  // ----- connection --------------------------------------------------------

  /**
   * connect opens the connection and keeps it open (reconnecting) until
   * disconnect or a kick. Resolves once connected (and the outbox read);
   * rejects with a NexoError
   * when the session ends first (kicked, the token refused for good,
   * disconnect()).
   * @returns {Promise<void>}
   */
  connect() {
    if (this.state === 'connected') return Promise.resolve();
    /** @type {Promise<void>} */
    const p = new Promise((resolve, reject) => { this._connectWaiters.push({ resolve: () => resolve(), reject }); });
    if (!this._wanted) {
      this._wanted = true;
      this._attempt = 0;
      this._authFailures = 0;
      this._open();
    }
    return p;
  }

  /**
   * reconnect replaces the connection at once (after a token refresh, or
   * when the network is back), resetting the backoff; connects if stopped.
   * @returns {Promise<void>} as connect()
   */
  reconnect() {
    if (!this._wanted) return this.connect();
    const p = this.state === 'connected' ? new Promise((resolve, reject) => { this._connectWaiters.push({ resolve: () => resolve(undefined), reject }); }) : this.connect();
    this._attempt = 0;
    this._gen++;
    this._dropSocket(CloseCode.NORMAL, 'client reconnect');
    this._open();
    return /** @type {Promise<void>} */ (p);
  }

  /** disconnect closes the connection and stops reconnecting; unsaved messages wait in the outbox for the next connect. */
  disconnect() {
    this._wanted = false;
    this._gen++;
    clearTimeout(this._timer);
    this._dropSocket(CloseCode.NORMAL, 'client disconnect');
    this._settleConnect(new NexoError('disconnected', 'disconnect() was called'));
    this._setState('disconnected');
  }

  /** @param {ConnectionState} s */
  _setState(s) {
    if (this.state === s) return;
    this.state = s;
    this.emit('state', s);
  }

  /** @param {Error | null} err */
  _settleConnect(err) {
    const ws = this._connectWaiters;
    this._connectWaiters = [];
    for (const w of ws) {
      if (err) w.reject(err);
      else w.resolve();
    }
  }

  /** wsURL is {url}/ws with the handshake's query. @param {string} token */
  _wsURL(token) {
    const u = new URL(`${this.url}/ws`);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    u.searchParams.set('token', token);
    u.searchParams.set('platform_id', String(this.platformId));
    if (this.userId) u.searchParams.set('send_id', this.userId);
    u.searchParams.set('operation_id', `sdk-${Date.now().toString(36)}`);
    return u.toString();
  }

  async _open() {
    clearTimeout(this._timer);
    if (!this._wanted) return;
    const gen = ++this._gen;
    this._setState('connecting');
    let token;
    try {
      const hint = this._tokenHint;
      token = await this.getToken(hint ? { reason: hint } : undefined);
    } catch (err) {
      if (gen !== this._gen) return;
      this.log.warn('nexo: getToken failed', err);
      this._scheduleReconnect();
      return;
    }
    if (gen !== this._gen || !this._wanted) return;
    if (!token) {
      this._end(new NexoError('token_missing', 'getToken returned no token'));
      return;
    }
    const hintedSame = this._tokenHint !== '' && token === this.token;
    this._tokenHint = '';
    this._setToken(token);
    if (!this._outboxLoaded) this._outboxLoaded = this._loadOutbox();
    let ws;
    try {
      ws = new this.WebSocketImpl(this._wsURL(token));
    } catch (err) {
      this.log.warn('nexo: WebSocket failed', err);
      this._scheduleReconnect();
      return;
    }
    this.ws = ws;
    this._gate = null;
    let opened = false;
    ws.onopen = () => {
      if (this.ws !== ws) return;
      opened = true;
      this._onOpen(ws);
    };
    ws.onmessage = (/** @type {{data: any}} */ e) => {
      if (this.ws !== ws) return;
      this._lastHeard = Date.now();
      const text = typeof e.data === 'string' ? e.data : String(e.data);
      if (text === 'pong') return;
      let f;
      try {
        f = JSON.parse(text);
      } catch {
        this.log.warn('nexo: a frame that is not JSON');
        return;
      }
      if (f && typeof f === 'object') this._onFrame(f);
    };
    ws.onerror = () => {};
    ws.onclose = (/** @type {{code: number, reason: string}} */ e) => {
      if (this.ws !== ws) return;
      // A connection that opened proves its token: only a refused
      // handshake with the token getToken gave back ends the session.
      this._onClose(e.code, String(e.reason || ''), opened, token, hintedSame && !opened);
    };
  }

  /** @param {string} token */
  _setToken(token) {
    this.token = token;
    const uid = userIdOf(token);
    if (uid) this.userId = uid;
  }

  /** @param {any} ws */
  _onOpen(ws) {
    this._authFailures = 0;
    this._startHeartbeat(ws);
    this._setState('connected');
    this._afterConnect(this._gen);
  }

  /**
   * @param {number} code @param {string} text @param {boolean} opened
   * @param {string} token the token this connection used
   * @param {boolean} hintedSame getToken answered a refresh request with the refused token
   */
  _onClose(code, text, opened, token, hintedSame) {
    this.ws = null;
    this._stopHeartbeat();
    this._failWaiting(new NexoError('disconnected', `the connection closed (${code}${text ? ` ${text}` : ''})`));
    this._inFlight.clear();
    if (!this._wanted) {
      this._setState('disconnected');
      return;
    }
    const gate = this._gate || (code === CloseCode.POLICY && text ? { reason: text, detail: '' } : null);
    if (gate && gate.reason === 'kicked') {
      // Another connection of this user took over: reconnecting would
      // take it back and start a ping-pong between devices.
      this._wanted = false;
      this._gen++;
      this._setState('disconnected');
      this.emit('kicked', { reason: gate.reason, detail: gate.detail });
      this._settleConnect(new NexoError('kicked', gate.detail));
      return;
    }
    if (gate && TOKEN_REASONS.has(gate.reason)) {
      this._authFailed(gate.reason, gate.detail, hintedSame);
      return;
    }
    if (opened && (code === CloseCode.SERVER_SHUTDOWN || code === CloseCode.RESTART)) {
      // The instance is going away; a load balancer sends the next
      // connection elsewhere: go at once.
      this.log.info('nexo: server shutting down; reconnecting at once');
      this._setState('connecting');
      this._timer = setTimeout(() => this._open(), 0);
      return;
    }
    if (!opened) {
      // A refused handshake looks like any failed connection to a
      // browser: ask HTTP whether the token still works.
      this._setState('connecting');
      const gen = this._gen;
      this.http.call('GET', '/user/info', { tokenOverride: token }).then(
        () => { if (gen === this._gen) this._scheduleReconnect(); },
        (/** @type {any} */ err) => {
          if (gen !== this._gen) return;
          if (err instanceof NexoError && TOKEN_REASONS.has(err.reason)) this._authFailed(err.reason, err.detail, hintedSame);
          else this._scheduleReconnect();
        },
      );
      return;
    }
    this._scheduleReconnect();
  }

  /**
   * _authFailed asks getToken for a fresh token and reconnects; when it
   * keeps handing back a refused token the session ends.
   * @param {string} reason @param {string} detail @param {boolean} hintedSame
   */
  _authFailed(reason, detail, hintedSame) {
    this._authFailures++;
    if (hintedSame || this._authFailures > 3) {
      this._end(new NexoError(reason, detail || 'the token was refused and getToken gave no new one'));
      return;
    }
    this._tokenHint = reason;
    this._setState('connecting');
    const wait = this._authFailures === 1 ? 0 : backoffDelay(this._authFailures - 1, this.minReconnectDelay, this.maxReconnectDelay, this.random);
    this._timer = setTimeout(() => this._open(), wait);
  }

  /** _end stops for good (until connect is called again) and reports err. @param {NexoError} err */
  _end(err) {
    this._wanted = false;
    this._gen++;
    this._dropSocket(CloseCode.NORMAL, 'session ended');
    this._setState('disconnected');
    this.emit('error', err);
    this._settleConnect(err);
  }

  _scheduleReconnect() {
    if (!this._wanted) return;
    const attempt = this._attempt++;
    const wait = backoffDelay(attempt, this.minReconnectDelay, this.maxReconnectDelay, this.random);
    this.log.debug(`nexo: reconnecting in ${wait} ms`);
    this._setState('connecting');
    this.emit('reconnecting', { delay: wait, attempt });
    clearTimeout(this._timer);
    this._timer = setTimeout(() => this._open(), wait);
  }

  /** _dropSocket closes the current socket without its close event doing anything. @param {number} code @param {string} text */
  _dropSocket(code, text) {
    const ws = this.ws;
    this.ws = null;
    this._stopHeartbeat();
    this._failWaiting(new NexoError('disconnected', 'the connection closed'));
    this._inFlight.clear();
    if (ws) {
      try { ws.close(code, text); } catch { /* already closing */ }
    }
  }

  /** @param {any} ws */
  _startHeartbeat(ws) {
    this._stopHeartbeat();
    this._lastHeard = Date.now();
    this._pingTimer = setInterval(() => {
      if (this.ws !== ws) return;
      const sentAt = Date.now();
      try { ws.send('ping'); } catch { return; }
      clearTimeout(this._pongTimer);
      this._pongTimer = setTimeout(() => {
        // Nothing heard since the ping: the connection is dead even if the
        // socket has not noticed (a sleeping laptop, a lost NAT entry).
        if (this.ws === ws && this._lastHeard < sentAt) {
          this.log.info('nexo: no pong; reconnecting');
          this._dropSocket(4000, 'no pong');
          this._scheduleReconnect();
        }
      }, this.pongTimeout);
    }, this.pingInterval);
  }

  _stopHeartbeat() {
    clearInterval(this._pingTimer);
    clearTimeout(this._pongTimer);
  }

  /** @param {Error} err */
  _failWaiting(err) {
    const w = [...this._waiting.values()];
    this._waiting.clear();
    for (const x of w) {
      clearTimeout(x.timer);
      x.reject(err);
    }
  }

  /**
   * request sends one WebSocket request and resolves with its response's
   * data; rejects with a NexoError (the server's reason; `disconnected`
   * when not connected or closed first; `timeout`).
   * @param {number} reqIdentifier
   * @param {Record<string, any>} data
   * @param {{timeout?: number}} [opts]
   * @returns {Promise<any>}
   */
  request(reqIdentifier, data, opts = {}) {
    const ws = this.ws;
    if (!ws || this.state !== 'connected') return Promise.reject(new NexoError('disconnected', 'not connected'));
    const msgIncr = String(++this._incr);
    const timeout = opts.timeout ?? this.requestTimeout;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this._waiting.delete(msgIncr)) reject(new NexoError('timeout', `no answer within ${timeout} ms`));
      }, timeout);
      this._waiting.set(msgIncr, { resolve, reject, timer });
      try {
        ws.send(JSON.stringify({ req_identifier: reqIdentifier, msg_incr: msgIncr, operation_id: `sdk-${msgIncr}`, data }));
      } catch (e) {
        this._waiting.delete(msgIncr);
        clearTimeout(timer);
        reject(new NexoError('disconnected', String(e)));
      }
    });
  }

  /** @param {any} f a decoded frame */
  _onFrame(f) {
    const data = f.data && typeof f.data === 'object' ? f.data : {};
    const id = f.req_identifier;
    const incr = typeof f.msg_incr === 'string' ? f.msg_incr : '';
    if (id === Push.KICK || (id === Push.ERROR && GATE_REASONS.has(data.reason) && data.reason !== 'too_many_requests')) {
      this._gate = { reason: data.reason || f.err_msg || 'kicked', detail: data.detail || '' };
    }
    if (incr && this._waiting.has(incr) && (id < 2000 || id === Push.ERROR)) {
      const w = /** @type {any} */ (this._waiting.get(incr));
      this._waiting.delete(incr);
      clearTimeout(w.timer);
      if (f.err_code === 0 && id < 2000) w.resolve(data);
      else w.reject(new NexoError(data.reason || f.err_msg || 'internal_error', data.detail || '', { errCode: f.err_code, data }));
      return;
    }
    if (id >= 2000) this.emit('push', f);
    switch (id) {
      case Push.MSG: if (this.stream) this._onPushedMessage(data); break;
      case Push.ACK: this._onAckPush(data); break;
      case Push.GROUP_NOTIFY: if (this.stream) this._onGroupNotify(data); break;
      case Push.READ_COUNTS:
        if (data.conversation_id) this.emit('readCounts', { conversationId: data.conversation_id, counts: Array.isArray(data.counts) ? data.counts : [] });
        break;
      case Push.TYPING:
        if (data.conversation_id && data.user_id) this.emit('typing', { conversationId: data.conversation_id, userId: data.user_id, typing: !!data.typing });
        break;
      case Push.ERROR:
        if (data.reason === 'save_failed' && data.client_msg_id) this._onSaveFailed(data);
        else if (!this._gate) {
          this.log.warn('nexo: server error', data.reason, data.detail);
          this.emit('error', new NexoError(data.reason || f.err_msg || 'internal_error', data.detail || '', { errCode: f.err_code || 0, data }));
        }
        break;
      default:
        break;
    }
  }

  // ----- after every (re)connect ----------------------------------------------

  /** @param {number} gen */
  async _afterConnect(gen) {
    try {
      await this._outboxLoaded;
    } catch (err) {
      this.log.error('nexo: outbox could not be read', err);
    }
    if (gen !== this._gen) return;
    // connect() resolves once what a previous page left is tracked, so
    // pendingMessages() lists it.
    this._settleConnect(null);
    // Accepted but unsaved: the resend answers the original ACK (saved by
    // now, or accepted again with a 2101 to follow on this connection).
    for (const out of this._outgoing.values()) {
      if (out.state === 'accepted') this._transmit(out);
    }
    this._pump();
    if (!this.stream) {
      this._attempt = 0;
      return;
    }
    try {
      await this._sync();
      if (gen === this._gen) this._attempt = 0;
    } catch (err) {
      if (gen !== this._gen) return;
      if (err instanceof NexoError && err.reason === 'disconnected') return;
      this.log.warn('nexo: sync failed', err);
      this.emit('error', err instanceof NexoError ? err : new NexoError('sync_failed', String(err)));
    }
  }

  /**
   * _sync reads every conversation's newest seqs (1001, paged), anchors the
   * conversations seen for the first time at their delivered cursor, and
   * fills every one whose max_seq is above what was emitted.
   */
  async _sync() {
    /** @type {Array<[string, any]>} */
    const entries = [];
    let cursor = '';
    let cursorless = false;
    try {
      for (let pages = 0; pages < 1000; pages++) {
        const data = await this.request(Req.NEWEST_SEQ, cursor ? { cursor, limit: 1000 } : { limit: 1000 }, { timeout: this.syncTimeout });
        for (const [k, v] of Object.entries(data.conversations || {})) if (v && typeof v === 'object') entries.push([k, v]);
        cursor = data.next_cursor || '';
        if (!cursor) break;
      }
    } catch (err) {
      if (err instanceof NexoError && err.reason === 'disconnected') throw err;
      // No cursors to start from (a server without 1001, or it failed):
      // a conversation starts at the first seq seen, not at its history.
      this.log.warn('nexo: newest seqs unavailable; conversations start at their first seq seen', err);
      cursorless = true;
      entries.length = 0;
    }
    this._cursorless = cursorless;
    for (const [id, s] of entries) {
      const c = this._conv(id);
      c.maxSeq = Math.max(c.maxSeq, s.max_seq || 0);
      if (!c.anchored) this._anchor(c, Math.max(s.delivered_seq || 0, s.read_seq || 0, (s.min_seq || 1) - 1));
    }
    this._synced = true;
    const waiters = this._syncWaiters;
    this._syncWaiters = [];
    for (const w of waiters) w();
    for (const c of this._convs.values()) {
      // Not in the list: new since (or without) the read, so every seq is new.
      if (!c.anchored) this._anchor(c, cursorless ? Math.max(0, Math.min(...c.buffer.keys(), c.maxSeq + 1) - 1) : 0);
      this._drain(c);
      if (c.maxSeq > c.hi || c.buffer.size) this._fill(c);
      if (c.acked < c.hi) this._scheduleAck(c);
    }
  }

  /** @param {string} id */
  _conv(id) {
    let c = this._convs.get(id);
    if (!c) {
      c = new Timeline(id);
      this._convs.set(id, c);
      if (this._synced && !this._cursorless) this._anchor(c, 0);
    }
    return c;
  }

  /** @param {Timeline} c @param {number} hi */
  _anchor(c, hi) {
    c.anchored = true;
    c.start = hi;
    c.hi = hi;
    c.acked = hi;
    for (const s of [...c.buffer.keys()]) if (s <= hi) c.buffer.delete(s);
  }

  // ----- the ordered, exactly-once message stream -----------------------------

  /** @param {any} m */
  _onPushedMessage(m) {
    if (!m.conversation_id || !(m.seq > 0)) return;
    const c = this._conv(m.conversation_id);
    if (!c.anchored && this._synced) this._anchor(c, m.seq - 1);
    c.maxSeq = Math.max(c.maxSeq, m.seq);
    this._hold(c, m);
    this._drain(c);
    if (c.anchored && c.buffer.size) this._fill(c);
  }

  /**
   * _hold keeps a message until every seq below it is out. An own message
   * (sent by this client) resolves its send and is not emitted.
   * @param {Timeline} c @param {any} m
   */
  _hold(c, m) {
    if (c.anchored && m.seq <= c.hi) return;
    const mine = m.client_msg_id && this._ownIds.has(m.client_msg_id) && (!this.userId || m.sender_id === this.userId);
    if (mine) {
      const out = this._outgoing.get(m.client_msg_id);
      if (out && m.status !== 'unavailable') {
        // Pulled or pushed back to us: it is saved (pushes and pulls carry saved messages).
        if (out._place(m.seq, m.server_msg_id || '', m.conversation_id, m.send_at || 0)) this._queueRemove(out.clientMsgId);
        this._finishSaved(out);
      }
      c.buffer.set(m.seq, null);
      return;
    }
    const prev = c.buffer.get(m.seq);
    if (prev === null) return;
    if (prev && prev.status !== 'unavailable' && m.status === 'unavailable') return;
    c.buffer.set(m.seq, m);
  }

  /** _drain emits the buffered run right above hi. @param {Timeline} c */
  _drain(c) {
    if (!c.anchored) return;
    let moved = false;
    while (c.buffer.has(c.hi + 1)) {
      const m = c.buffer.get(c.hi + 1);
      c.buffer.delete(c.hi + 1);
      c.hi++;
      moved = true;
      if (m) this._emitMessage(m);
    }
    if (moved) this._scheduleAck(c);
  }

  /** @param {Message} m */
  _emitMessage(m) {
    if (m.status === 'unavailable') {
      if (this.emitPlaceholders) this.emit('message', { conversation_id: m.conversation_id, seq: m.seq, status: 'unavailable' });
      return;
    }
    this.emit('message', m);
    const type = m.msg_type || 0;
    if (type === MsgType.REVOKE_NOTIFICATION) {
      const x = (m.content && m.content.custom) || {};
      this.emit('recall', {
        conversationId: x.conversation_id || m.conversation_id, seq: x.seq || 0, serverMsgId: x.server_msg_id || '',
        senderId: x.sender_id || '', revokerId: x.revoker_id || m.sender_id || '', revokedAt: x.revoked_at || m.send_at || 0, notification: m,
      });
    } else if (type === MsgType.EDIT_NOTIFICATION) {
      const x = (m.content && m.content.custom) || {};
      this.emit('edit', {
        conversationId: x.conversation_id || m.conversation_id, seq: x.seq || 0, editorId: x.editor_id || '', editVersion: x.edit_version || 0,
        editedAt: x.edited_at || 0, content: x.content || {}, notification: m,
      });
    } else if (type === MsgType.REACTION_NOTIFICATION) {
      const x = (m.content && m.content.custom) || {};
      this.emit('reaction', {
        conversationId: x.conversation_id || m.conversation_id, seq: x.seq || 0, userId: x.user_id || '', emoji: x.emoji || '',
        op: x.op === 'remove' ? 'remove' : 'add', count: x.count || 0, notification: m,
      });
    } else if (type === MsgType.DELETE_NOTIFICATION || type === MsgType.DELETE_SELF_NOTIFICATION) {
      const x = (m.content && m.content.custom) || {};
      this.emit('delete', {
        conversationId: x.conversation_id || m.conversation_id, seqs: x.seqs || [], scope: type === MsgType.DELETE_NOTIFICATION ? 'everyone' : 'self',
        deleterId: x.deleter_id || '', deletedAt: x.deleted_at || 0, notification: m,
      });
    } else if (type >= MsgType.NOTIFICATION_MIN && type < 1600 && m.conversation_id.startsWith('sg_')) {
      this.emit('group', m);
    }
  }

  /**
   * _fill pulls (1005) from hi+1 until the conversation's max seq and every
   * buffered message are reached; one fill per conversation at a time.
   * @param {Timeline} c
   */
  async _fill(c) {
    if (!c.anchored) return;
    if (c.filling) {
      c.fillAgain = true;
      return;
    }
    c.filling = true;
    try {
      for (;;) {
        c.fillAgain = false;
        const target = Math.max(c.maxSeq, ...c.buffer.keys());
        if (c.hi >= target || this.state !== 'connected') break;
        const before = c.hi;
        const res = await this.request(Req.PULL_RANGE, { conversation_id: c.id, begin_seq: c.hi + 1, limit: PULL_LIMIT });
        if (res.max_seq) c.maxSeq = Math.max(c.maxSeq, res.max_seq);
        const first = res.min_seq || 0;
        if (first > c.hi + 1) {
          // Below min_seq the caller sees nothing (a group joined later).
          const skipTo = first - 1;
          for (const s of [...c.buffer.keys()]) if (s <= skipTo) c.buffer.delete(s);
          c.hi = skipTo;
        }
        for (const m of res.messages || []) {
          if (!(m.seq > 0)) continue;
          this._hold(c, { ...m, conversation_id: c.id });
        }
        this._drain(c);
        if (c.hi === before && !c.fillAgain) {
          // The page stopped at a seq still in flight ("not yet"): its push
          // brings it, or look again shortly.
          this._retryFill(c);
          break;
        }
      }
    } catch (err) {
      if (!(err instanceof NexoError && err.reason === 'disconnected')) {
        this.log.warn('nexo: pull failed', c.id, err);
        this._retryFill(c);
      }
    } finally {
      c.filling = false;
    }
    if (c.fillAgain && this.state === 'connected') this._fill(c);
  }

  /** @param {Timeline} c */
  _retryFill(c) {
    if (c.retryTimer) return;
    c.retryTimer = setTimeout(() => {
      c.retryTimer = 0;
      if (c.maxSeq > c.hi || c.buffer.size) this._fill(c);
    }, this.pendingRetryDelay);
  }

  /** @param {any} d */
  _onGroupNotify(d) {
    if (!d.conversation_id) return;
    const c = this._conv(d.conversation_id);
    c.maxSeq = Math.max(c.maxSeq, d.max_seq || 0);
    if (c.anchored && c.maxSeq > c.hi) this._fill(c);
  }

  /** @param {Timeline} c */
  _scheduleAck(c) {
    if (!this.autoAckDelivered || c.ackTimer || c.hi <= c.acked) return;
    c.ackTimer = setTimeout(() => {
      c.ackTimer = 0;
      const seq = c.hi;
      if (seq <= c.acked || this.state !== 'connected') return;
      // The contiguous prefix only: the server resends above delivered_seq.
      this.request(Req.ACK, { ack_type: 'delivered', conversation_id: c.id, seq }).then(
        () => { c.acked = Math.max(c.acked, seq); },
        (/** @type {any} */ err) => { if (err.reason !== 'disconnected') this.log.debug('nexo: delivered ACK refused', c.id, err.reason); },
      );
    }, ACK_DELAY);
  }

  /** @param {any} d */
  _onAckPush(d) {
    switch (d.ack_type) {
      case 'saved': {
        const out = this._outgoing.get(d.client_msg_id);
        if (out) {
          if (out.state === 'pending' && d.seq) this._accepted(out, d);
          this._finishSaved(out);
        }
        break;
      }
      case 'delivered':
      case 'read':
        this.emit('receipt', { conversationId: d.conversation_id, userId: d.user_id || '', ackType: d.ack_type, seq: d.seq || 0 });
        break;
      default:
        break;
    }
  }

  // ----- sending -----------------------------------------------------------------

  /**
   * send queues a message and returns at once. It is sent as soon as the
   * connection is up and sent again, with the same clientMsgId, after every
   * reconnect until the server has saved it or refused it for good.
   * @param {SendParams} p
   * @returns {OutgoingMessage}
   */
  send(p) {
    if (!p || (!p.recvId === !p.groupId)) throw new TypeError('send: exactly one of recvId and groupId');
    if (!Number.isInteger(p.msgType)) throw new TypeError('send: msgType must be an integer');
    const content = { ...(p.content || {}) };
    /** @type {SendBody} */
    const body = {
      client_msg_id: p.clientMsgId || newClientMsgID(),
      session_type: p.groupId ? SessionType.GROUP : SessionType.SINGLE,
      msg_type: p.msgType,
      content,
    };
    if (p.groupId) body.group_id = p.groupId;
    else body.recv_id = p.recvId;
    if (p.atUserIds && p.atUserIds.length) body.at_user_ids = p.atUserIds;
    if (p.quote) body.quote = p.quote;
    const existing = this._outgoing.get(body.client_msg_id);
    if (existing) return existing;
    /** @type {OutboxRecord} */
    const rec = { clientMsgId: body.client_msg_id, owner: this.userId, body, state: 'pending', createdAt: Date.now(), order: this._order++ };
    const out = this._track(rec);
    this._outboxWrite({ put: rec });
    this._pump();
    return out;
  }

  /**
   * pendingMessages lists the messages not yet saved (or failed), in send
   * order — after a reload, the ones an IndexedDB outbox brought back.
   * @returns {OutgoingMessage[]}
   */
  pendingMessages() {
    return [...this._outgoing.values()].sort((a, b) => a.createdAt - b.createdAt);
  }

  /** @param {OutboxRecord} rec */
  _track(rec) {
    const out = new OutgoingMessage(rec);
    out.onListenerError = this.onListenerError;
    this._outgoing.set(rec.clientMsgId, out);
    this._ownIds.add(rec.clientMsgId);
    if (out.state === 'pending') this._queue.push(rec.clientMsgId);
    return out;
  }

  /** _loadOutbox brings back the records a previous client left (IndexedDB). */
  async _loadOutbox() {
    const recs = await this.outbox.list();
    recs.sort((a, b) => (a.createdAt - b.createdAt) || (a.order - b.order));
    for (const rec of recs) {
      if (this._outgoing.has(rec.clientMsgId)) continue;
      if (rec.owner && this.userId && rec.owner !== this.userId) continue;
      this._track(rec);
    }
    // Sends made before the load keep their place after the loaded ones.
    const order = new Map(recs.map((r, i) => [r.clientMsgId, i]));
    this._queue.sort((a, b) => (order.get(a) ?? Infinity) - (order.get(b) ?? Infinity));
  }

  /**
   * _outboxWrite queues one outbox write. Writes queued while an earlier
   * flush runs go together in the next one — one IndexedDB transaction for
   * a burst of sends instead of one each — so a reload soon after a burst
   * finds it in the outbox; writes still apply in the order they were made.
   * @param {OutboxOp} op
   */
  _outboxWrite(op) {
    this._outboxPending.push(op);
    if (this._outboxPending.length > 1) return; // a flush is already due
    this._outboxChain = this._outboxChain
      .then(() => {
        const ops = this._outboxPending;
        this._outboxPending = [];
        return applyOutboxOps(this.outbox, ops);
      })
      .catch((err) => this.log.error('nexo: outbox write failed', err));
  }

  /** _pump transmits queued messages in order, sendWindow at a time. */
  _pump() {
    if (this.state !== 'connected' || !this.ws) return;
    const now = Date.now();
    if (this._pausedUntil > now) {
      clearTimeout(this._pauseTimer);
      this._pauseTimer = setTimeout(() => this._pump(), this._pausedUntil - now);
      return;
    }
    let inflight = 0;
    for (const id of this._queue) if (this._inFlight.has(id)) inflight++;
    for (const id of this._queue) {
      if (inflight >= this.sendWindow) break;
      if (this._inFlight.has(id)) continue;
      const out = this._outgoing.get(id);
      if (!out || out.state !== 'pending') continue;
      inflight++;
      this._transmit(out);
    }
  }

  /** @param {string} id */
  _queueRemove(id) {
    const i = this._queue.indexOf(id);
    if (i >= 0) this._queue.splice(i, 1);
  }

  /** @param {OutgoingMessage} out */
  async _transmit(out) {
    if (this._inFlight.has(out.clientMsgId)) return;
    this._inFlight.add(out.clientMsgId);
    const gen = this._gen;
    try {
      const ack = await this.request(Req.SEND, out.body);
      if (gen === this._gen) this._inFlight.delete(out.clientMsgId);
      this._accepted(out, ack);
      if (ack.ack_type === 'saved') this._finishSaved(out);
    } catch (err) {
      if (gen === this._gen) this._inFlight.delete(out.clientMsgId);
      const e = err instanceof NexoError ? err : new NexoError('internal_error', String(err));
      if (RETRYABLE_SEND_REASONS.has(e.reason)) {
        if (e.reason === 'too_many_requests' || e.reason === 'server_busy' || e.reason === 'internal_error') {
          const wait = e.data.retry_after_ms || (e.reason === 'too_many_requests' ? 50 : 1000);
          this._pausedUntil = Math.max(this._pausedUntil, Date.now() + wait);
          if (out.state === 'accepted') setTimeout(() => { if (this.state === 'connected') this._transmit(out); }, wait);
        }
        // disconnected/timeout: the next connection sends it again.
        if (e.reason === 'timeout' && out.state === 'accepted') setTimeout(() => this._transmit(out), 0);
      } else {
        this._fail(out, e);
      }
    }
    this._pump();
  }

  /** @param {OutgoingMessage} out @param {any} ack */
  _accepted(out, ack) {
    if (out.state === 'failed' || out.state === 'saved') return;
    if (out.state === 'accepted' && ack.seq && out.seq && ack.seq !== out.seq) {
      // The original could never be saved (save_failed was lost): the
      // retry is the message now.
      this.log.warn('nexo: message re-placed', out.clientMsgId, out.seq, '→', ack.seq);
      out.seq = ack.seq;
    }
    const moved = out._place(ack.seq, ack.server_msg_id || '', ack.conversation_id || '', ack.send_at || 0);
    this._queueRemove(out.clientMsgId);
    if (this.stream && ack.conversation_id && ack.seq) {
      const c = this._conv(ack.conversation_id);
      if (!c.anchored && this._synced) this._anchor(c, ack.seq - 1);
      c.maxSeq = Math.max(c.maxSeq, ack.seq);
      if (!c.anchored || ack.seq > c.hi) c.buffer.set(ack.seq, null);
      this._drain(c);
      if (c.anchored && c.buffer.size) this._fill(c);
    }
    if (moved) {
      /** @type {OutboxRecord} */
      const rec = {
        clientMsgId: out.clientMsgId, owner: this.userId, body: out.body, state: 'accepted', seq: out.seq,
        serverMsgId: out.serverMsgId, conversationId: out.conversationId, sendAt: out.sendAt, createdAt: out.createdAt, order: 0,
      };
      this._outboxWrite({ put: rec });
    }
  }

  /** @param {OutgoingMessage} out */
  _finishSaved(out) {
    if (out._to('saved') || out.state === 'saved') {
      this._outgoing.delete(out.clientMsgId);
      this._queueRemove(out.clientMsgId);
      this._outboxWrite({ delete: out.clientMsgId });
    }
  }

  /** @param {OutgoingMessage} out @param {NexoError} err */
  _fail(out, err) {
    out.error = err;
    out._to('failed');
    this._outgoing.delete(out.clientMsgId);
    this._queueRemove(out.clientMsgId);
    this._outboxWrite({ delete: out.clientMsgId });
  }

  /** @param {any} d a save_failed error's data */
  _onSaveFailed(d) {
    const out = this._outgoing.get(d.client_msg_id);
    if (!out) return;
    // Its seq now reads as unavailable; a placeholder stands in for it.
    if (d.conversation_id && d.seq) {
      const c = this._conv(d.conversation_id);
      if (c.anchored && d.seq > c.hi) c.buffer.set(d.seq, { conversation_id: d.conversation_id, seq: d.seq, status: 'unavailable' });
      this._drain(c);
    }
    this._fail(out, new NexoError('save_failed', d.detail || 'the server could not store the message', { data: d }));
  }

  // ----- requests an app makes ---------------------------------------------------

  /**
   * pull reads a window of a conversation's history (1005; HTTP GET
   * /msg/pull when not connected): from `from` up, or the `limit` seqs
   * ending at `to`, or the newest `limit`. It does not touch the message
   * stream: use it to show history.
   * @param {string} conversationId
   * @param {{from?: number, to?: number, limit?: number}} [range]
   * @returns {Promise<PullResult>}
   */
  async pull(conversationId, range = {}) {
    /** @type {Record<string, any>} */
    const q = { conversation_id: conversationId };
    if (range.from) q.begin_seq = range.from;
    if (range.to) q.end_seq = range.to;
    if (range.limit) q.limit = range.limit;
    const res = this.state === 'connected'
      ? await this.request(Req.PULL_RANGE, q)
      : await this.http.call('GET', '/msg/pull', { query: q });
    const messages = (res.messages || []).map((/** @type {any} */ m) => ({ ...m, conversation_id: conversationId }));
    return { messages, minSeq: res.min_seq || 0, maxSeq: res.max_seq || 0, pendingSeqs: res.pending_seqs || [] };
  }

  /**
   * history reads the page of a conversation's older messages that ends
   * right below `before` — without `before`, right where its "message"
   * stream starts (the delivered cursor the first sync read, or the newest
   * seq for a conversation the stream has not started yet). Pages and the
   * stream together hold every seq once, with no gap between them: show
   * `history()` then the stream, and page back with
   * `history(id, {before: lowestSeqShown})` while `hasMore`. The first call
   * waits for the connect's sync (at most syncTimeout ms). Over HTTP when
   * not connected.
   * @param {string} conversationId
   * @param {{before?: number, limit?: number}} [opts]  limit: default 50, at most 100
   * @returns {Promise<HistoryPage>}
   */
  async history(conversationId, opts = {}) {
    const limit = Math.min(Math.max(1, opts.limit || 50), PULL_LIMIT);
    if (this.stream && !this._synced && this._wanted) await this._whenSynced(this.syncTimeout);
    let end = opts.before ? opts.before - 1 : -1;
    const known = this._convs.get(conversationId);
    if (end < 0 && this.stream && known && known.anchored) end = known.start;
    if (end === 0) return { messages: [], end: 0, hasMore: false, minSeq: 0, maxSeq: 0 };
    const page = await this.pull(conversationId, end > 0 ? { to: end, limit } : { limit });
    if (end < 0) {
      // The stream has not started here: it starts above this page (or
      // below its lowest buffered arrival).
      end = page.maxSeq;
      if (this.stream && this._synced) {
        // Not _conv: a conversation new to the stream must not start at 0
        // when nothing will push its seqs (the user's own, from elsewhere).
        let c = this._convs.get(conversationId);
        if (!c) {
          c = new Timeline(conversationId);
          this._convs.set(conversationId, c);
        }
        if (!c.anchored) {
          this._anchor(c, Math.min(end, ...[...c.buffer.keys()].map((s) => s - 1)));
          this._drain(c);
          if (c.maxSeq > c.hi || c.buffer.size) this._fill(c);
        }
        end = c.start;
      }
    }
    const messages = page.messages.filter((m) => m.seq <= end);
    const first = messages.length ? messages[0].seq : end + 1;
    const hasMore = page.pendingSeqs.some((s) => s <= end) || first > Math.max(page.minSeq, 1);
    return { messages, end, hasMore, minSeq: page.minSeq, maxSeq: page.maxSeq };
  }

  /** _whenSynced resolves after the next sync, or after ms. @param {number} ms */
  _whenSynced(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this._syncWaiters.push(() => { clearTimeout(timer); resolve(undefined); });
    });
  }

  /**
   * markRead moves the read cursor of conversationId to seq (1101 read;
   * the other side gets a receipt). Never beyond what the user holds.
   * @param {string} conversationId @param {number} seq
   * @returns {Promise<{ack_type: string, conversation_id: string, seq: number}>}
   */
  markRead(conversationId, seq) {
    if (this.state !== 'connected') return this.http.call('POST', '/msg/mark_read', { body: { conversation_id: conversationId, seq } });
    return this.request(Req.ACK, { ack_type: 'read', conversation_id: conversationId, seq });
  }

  /**
   * typing tells the conversation's other members that the user is (no
   * longer) typing (1103; at most 2 a second, else too_many_requests).
   * @param {string} conversationId @param {boolean} isTyping
   * @returns {Promise<{delivered: number}>}
   */
  typing(conversationId, isTyping) {
    return this.request(Req.TYPING, { conversation_id: conversationId, typing: !!isTyping });
  }

  /**
   * recall revokes a message (1102): its sender within 2 minutes, a group's
   * owner and admins any time. Everyone then gets a recall event.
   * @param {string} conversationId @param {number} seq
   */
  recall(conversationId, seq) {
    return this.request(Req.REVOKE, { conversation_id: conversationId, seq });
  }

  /** setBackground tells the server whether the app is in the background (1104; offline push). @param {boolean} background */
  setBackground(background) {
    return this.request(Req.APP_STATE, { background: !!background });
  }

  /**
   * conversations reads the conversation list (GET /conversation/list),
   * every page: pinned first, then by newest message.
   * @param {{max?: number}} [opts]  max: stop after this many (default 1000)
   * @returns {Promise<any[]>}
   */
  async conversations(opts = {}) {
    const max = opts.max || 1000;
    /** @type {any[]} */
    const all = [];
    for (let offset = 0; offset < max; offset += 100) {
      const data = await this.http.conversations({ offset, limit: 100 });
      const page = data.conversations || [];
      all.push(...page);
      if (page.length < 100 || all.length >= (data.total || 0)) break;
    }
    return all.slice(0, max);
  }

  /**
   * newestSeqs reads {max_seq, min_seq, read_seq, delivered_seq} of the
   * given conversations (1001).
   * @param {string[]} conversationIds
   * @returns {Promise<Record<string, {max_seq: number, min_seq: number, read_seq: number, delivered_seq: number}>>}
   */
  async newestSeqs(conversationIds) {
    const data = await this.request(Req.NEWEST_SEQ, { conversation_ids: conversationIds });
    return data.conversations || {};
  }

  /**
   * search finds messages (WS 1105 when connected, else POST /msg/search):
   * {keyword, conversation_id?, sender_id?, msg_types?, from?, to?, cursor?, limit?, order?}.
   * @param {Record<string, any>} query
   * @returns {Promise<{results: any[], next_cursor: string}>}
   */
  search(query) {
    return this.state === 'connected' ? this.request(Req.SEARCH, query) : this.http.search(query);
  }

  // ----- message actions (docs/actions.md): WS when connected, else HTTP -------

  /**
   * _action sends a message action over the WebSocket (it answers as the
   * HTTP route) or, when not connected, over HTTP.
   * @param {number} req @param {'GET' | 'POST'} method @param {string} path @param {Record<string, any>} data
   */
  _action(req, method, path, data) {
    if (this.state === 'connected') return this.request(req, data);
    return method === 'GET' ? this.http.call('GET', path, { query: data }) : this.http.call('POST', path, { body: data });
  }

  /**
   * edit replaces the text of the user's own text message (101/106) within
   * msg.edit_window; everyone gets an "edit" event (1601) in seq order.
   * @param {string} conversationId @param {number} seq @param {{text: string}} content
   * @returns {Promise<any>} the server's answer (edit_version, edited_at, …)
   */
  edit(conversationId, seq, content) {
    return this._action(Req.EDIT, 'POST', '/msg/edit', { conversation_id: conversationId, seq, content });
  }

  /**
   * edits lists a message's earlier versions, oldest first (1107, GET /msg/edits).
   * @param {string} conversationId @param {number} seq
   * @returns {Promise<any>}
   */
  edits(conversationId, seq) {
    return this._action(Req.EDITS, 'GET', '/msg/edits', { conversation_id: conversationId, seq });
  }

  /**
   * deleteMessages deletes 1–100 seqs, all or none: scope "self" hides them
   * for this user's devices (a "delete" event in the user's own
   * conversation), "everyone" leaves tombstones for all (own messages, or
   * any for a group's owner and admins).
   * @param {string} conversationId @param {number[]} seqs @param {'self' | 'everyone'} [scope]
   * @returns {Promise<any>}
   */
  deleteMessages(conversationId, seqs, scope = 'self') {
    return this._action(Req.DELETE, 'POST', '/msg/delete', { conversation_id: conversationId, seqs, scope });
  }

  /**
   * react adds (or with op "remove" takes back) one emoji on a message;
   * everyone gets a "reaction" event with the count after the change.
   * @param {string} conversationId @param {number} seq @param {string} emoji @param {'add' | 'remove'} [op]
   * @returns {Promise<any>}
   */
  react(conversationId, seq, emoji, op = 'add') {
    return this._action(Req.REACTION, 'POST', '/msg/reaction', { conversation_id: conversationId, seq, emoji, op });
  }

  /**
   * readBy tells who read a message: {read_count, member_count,
   * read_user_ids, unread_user_ids, next_cursor} (a page of at most 500).
   * @param {string} conversationId @param {number} seq @param {{cursor?: string, limit?: number}} [page]
   * @returns {Promise<{read_count: number, member_count: number, read_user_ids: string[], unread_user_ids: string[], next_cursor: string}>}
   */
  readBy(conversationId, seq, page = {}) {
    return this._action(Req.READ_BY, 'GET', '/msg/read_by', { conversation_id: conversationId, seq, ...page });
  }

  /**
   * report reports a message to the moderators (docs/moderation.md):
   * → {report_id, status, created_at, duplicate}.
   * @param {string} conversationId @param {number} seq @param {string} reason
   * @returns {Promise<any>}
   */
  report(conversationId, seq, reason) {
    return this._action(Req.REPORT, 'POST', '/msg/report', { conversation_id: conversationId, seq, reason });
  }

  /**
   * upload stores a file (POST /object/upload, docs/media.md) and resolves
   * with the object; send it as a reference, e.g. `{msgType: 102, content:
   * {image: {object_id}}}`. onProgress(sent, total) follows the upload.
   * @param {Blob} file
   * @param {{name?: string, purpose?: 'message' | 'avatar', onProgress?: (sent: number, total: number) => void, signal?: AbortSignal}} [opts]
   * @returns {Promise<any>}
   */
  upload(file, opts) { return this.http.upload(file, opts); }

  /** objectUrl: a signed URL of an object the user may see → {url, expires_at}. @param {string} objectId @param {'original' | 'thumbnail'} [variant] */
  objectUrl(objectId, variant) { return this.http.objectUrl(objectId, variant); }

  // HTTP conveniences: the calls most apps need, typed; the rest is on client.http.

  /** @param {string} [userId] */
  userInfo(userId) { return this.http.userInfo(userId); }
  /** @param {Record<string, any>} fields */
  updateUser(fields) { return this.http.updateUser(fields); }
  /** @param {string} keyword @param {number} [limit] */
  searchUsers(keyword, limit) { return this.http.searchUsers(keyword, limit); }
  /** @param {string[]} userIds */
  presence(userIds) { return this.http.presence(userIds); }
  /** @param {Record<string, any>} body */
  createGroup(body) { return this.http.createGroup(body); }
  /** @param {string} groupId */
  joinGroup(groupId) { return this.http.joinGroup(groupId); }
  /** @param {string} groupId @param {string[]} userIds */
  inviteToGroup(groupId, userIds) { return this.http.inviteToGroup(groupId, userIds); }
  /** @param {string} groupId @param {string[]} userIds */
  kickFromGroup(groupId, userIds) { return this.http.kickFromGroup(groupId, userIds); }
  /** @param {string} groupId */
  quitGroup(groupId) { return this.http.quitGroup(groupId); }
  /** @param {string} groupId */
  dismissGroup(groupId) { return this.http.dismissGroup(groupId); }
  /** @param {Record<string, any>} body */
  updateGroup(body) { return this.http.updateGroup(body); }
  /** @param {string} groupId */
  groupInfo(groupId) { return this.http.groupInfo(groupId); }
  /** @param {string} groupId @param {{offset?: number, limit?: number}} [page] */
  groupMembers(groupId, page) { return this.http.groupMembers(groupId, page); }
  /**
   * groups lists every group of the caller (GET /group/list, every page).
   * @returns {Promise<any[]>}
   */
  async groups() {
    /** @type {any[]} */
    const all = [];
    let cursor = '';
    for (let i = 0; i < 100; i++) {
      const data = await this.http.groups(cursor ? { cursor, limit: 500 } : { limit: 500 });
      all.push(...(data.groups || []));
      cursor = data.next_cursor || '';
      if (!cursor) break;
    }
    return all;
  }
  /** @param {string} keyword @param {number} [limit] */
  searchGroups(keyword, limit) { return this.http.searchGroups(keyword, limit); }

  /** conversationIdOfGroup is "sg_{groupId}". @param {string} groupId */
  static groupConversationID(groupId) { return groupConversationID(groupId); }

  /** @param {{reason: string} | undefined} hint */
  async _httpToken(hint) {
    if (!this.token || hint) this._setToken(await this.getToken(hint));
    return this.token;
  }
}

/**
 * userIdOf reads the user_id claim of a Nexo JWT ('' when it is not one).
 * Only to address the handshake and own messages: the server checks it.
 * @param {string} token
 * @returns {string}
 */
export function userIdOf(token) {
  try {
    const part = token.split('.')[1];
    if (!part) return '';
    const b64 = part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '=');
    const json = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0))));
    return typeof json.user_id === 'string' ? json.user_id : '';
  } catch {
    return '';
  }
}
