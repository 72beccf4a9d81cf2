// OutgoingMessage: one message this client sends, through its states
// pending → accepted → saved (or failed).

import { Emitter } from './emitter.js';

/** @typedef {import('./outbox.js').OutboxRecord} OutboxRecord */
/** @typedef {import('./outbox.js').SendBody} SendBody */

/** @typedef {'pending' | 'accepted' | 'saved' | 'failed'} SendState */

/**
 * @typedef {object} SendResult  where the server placed a message
 * @property {number} seq              its final seq in the conversation
 * @property {string} serverMsgId      the server's UUIDv7
 * @property {string} conversationId   "si_a_b" or "sg_group" (the accept time is out.sendAt)
 */

/**
 * @typedef {object} OutgoingEvents
 * @property {SendState} state   the new state
 */

const RANK = { pending: 0, accepted: 1, saved: 2, failed: 3 };

/**
 * OutgoingMessage is what client.send returns, at once. Its state only
 * moves forward: pending (not yet accepted; resent after every reconnect
 * with the same clientMsgId), accepted (has its final seq), saved (in the
 * database: final), failed (refused for good; `error` says why; final).
 * @extends {Emitter<OutgoingEvents>}
 */
export class OutgoingMessage extends Emitter {
  /** @param {OutboxRecord} rec */
  constructor(rec) {
    super();
    /** The message's client_msg_id, the same on every retry. @type {string} */
    this.clientMsgId = rec.clientMsgId;
    /** The 1003 data sent, unchanged across retries. @type {SendBody} */
    this.body = rec.body;
    /** pending, accepted, saved or failed; every change is a "state" event. @type {SendState} */
    this.state = 'pending';
    /** The final seq (0 until accepted). @type {number} */
    this.seq = 0;
    /** The server's ID ('' until accepted). @type {string} */
    this.serverMsgId = '';
    /** The conversation ('' until accepted). @type {string} */
    this.conversationId = '';
    /** The server's accept time, Unix ms (0 until accepted). @type {number} */
    this.sendAt = 0;
    /** When send was called, Unix ms. @type {number} */
    this.createdAt = rec.createdAt;
    /** Why it failed (null unless failed). @type {import('./protocol.js').NexoError | null} */
    this.error = null;
    /** @type {(r: SendResult) => void} */
    let resolveAccepted = () => {};
    /** @type {(e: Error) => void} */
    let rejectAccepted = () => {};
    /** @type {(r: SendResult) => void} */
    let resolveSaved = () => {};
    /** @type {(e: Error) => void} */
    let rejectSaved = () => {};
    /** Resolves at ACK(accepted) (or saved); rejects when the message fails first. @type {Promise<SendResult>} */
    this.accepted = new Promise((res, rej) => { resolveAccepted = res; rejectAccepted = rej; });
    /** Resolves once the message is in the database; rejects when it fails. @type {Promise<SendResult>} */
    this.saved = new Promise((res, rej) => { resolveSaved = res; rejectSaved = rej; });
    // An app that never awaits a promise must not get an unhandled rejection.
    this.accepted.catch(() => {});
    this.saved.catch(() => {});
    this._resolveAccepted = resolveAccepted;
    this._rejectAccepted = rejectAccepted;
    this._resolveSaved = resolveSaved;
    this._rejectSaved = rejectSaved;
    if (rec.state === 'accepted' && rec.seq) this._place(rec.seq, rec.serverMsgId || '', rec.conversationId || '', rec.sendAt || 0);
  }

  /** @returns {SendResult} */
  result() {
    return { seq: this.seq, serverMsgId: this.serverMsgId, conversationId: this.conversationId };
  }

  /**
   * @param {number} seq @param {string} serverMsgId @param {string} conversationId @param {number} sendAt
   * @returns {boolean} whether the state moved
   */
  _place(seq, serverMsgId, conversationId, sendAt) {
    this.seq = seq;
    this.serverMsgId = serverMsgId || this.serverMsgId;
    this.conversationId = conversationId || this.conversationId;
    this.sendAt = sendAt || this.sendAt;
    return this._to('accepted');
  }

  /**
   * _to moves the state forward (never back) and settles the promises.
   * @param {SendState} s
   * @returns {boolean} whether the state moved
   */
  _to(s) {
    if (this.state === 'saved' || this.state === 'failed' || RANK[s] <= RANK[this.state]) return false;
    this.state = s;
    if (s === 'accepted' || s === 'saved') this._resolveAccepted(this.result());
    if (s === 'saved') this._resolveSaved(this.result());
    if (s === 'failed') {
      const err = this.error || new Error('failed');
      this._rejectAccepted(err);
      this._rejectSaved(err);
    }
    this.emit('state', s);
    return true;
  }
}
