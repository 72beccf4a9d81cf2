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
 * @property {string} conversationId   "si_a_b" or "sg_group"
 * @property {number} sendAt           the server's accept time, Unix ms
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
    /** @type {string} */
    this.clientMsgId = rec.clientMsgId;
    /** @type {SendBody} the 1003 data sent, unchanged across retries */
    this.body = rec.body;
    /** @type {SendState} */
    this.state = 'pending';
    /** @type {number} 0 until accepted */
    this.seq = 0;
    /** @type {string} */
    this.serverMsgId = '';
    /** @type {string} '' until accepted */
    this.conversationId = '';
    /** @type {number} */
    this.sendAt = 0;
    /** @type {number} Unix ms when send was called */
    this.createdAt = rec.createdAt;
    /** @type {import('./protocol.js').NexoError | null} why it failed */
    this.error = null;
    /** @type {(r: SendResult) => void} */
    let resolveAccepted = () => {};
    /** @type {(e: Error) => void} */
    let rejectAccepted = () => {};
    /** @type {(r: SendResult) => void} */
    let resolveSaved = () => {};
    /** @type {(e: Error) => void} */
    let rejectSaved = () => {};
    /** @type {Promise<SendResult>} resolves at ACK(accepted) (or saved); rejects when the message fails first */
    this.accepted = new Promise((res, rej) => { resolveAccepted = res; rejectAccepted = rej; });
    /** @type {Promise<SendResult>} resolves once the message is in the database; rejects when it fails */
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
    return { seq: this.seq, serverMsgId: this.serverMsgId, conversationId: this.conversationId, sendAt: this.sendAt };
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
