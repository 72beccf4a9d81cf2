/**
 * OutgoingMessage is what client.send returns, at once. Its state only
 * moves forward: pending (not yet accepted; resent after every reconnect
 * with the same clientMsgId), accepted (has its final seq), saved (in the
 * database: final), failed (refused for good; `error` says why; final).
 * @extends {Emitter<OutgoingEvents>}
 */
export class OutgoingMessage extends Emitter<OutgoingEvents> {
    /** @param {OutboxRecord} rec */
    constructor(rec: OutboxRecord);
    /** The message's client_msg_id, the same on every retry. @type {string} */
    clientMsgId: string;
    /** The 1003 data sent, unchanged across retries. @type {SendBody} */
    body: SendBody;
    /** pending, accepted, saved or failed; every change is a "state" event. @type {SendState} */
    state: SendState;
    /** The final seq (0 until accepted). @type {number} */
    seq: number;
    /** The server's ID ('' until accepted). @type {string} */
    serverMsgId: string;
    /** The conversation ('' until accepted). @type {string} */
    conversationId: string;
    /** The server's accept time, Unix ms (0 until accepted). @type {number} */
    sendAt: number;
    /** When send was called, Unix ms. @type {number} */
    createdAt: number;
    /** Why it failed (null unless failed). @type {import('./protocol.js').NexoError | null} */
    error: import("./protocol.js").NexoError | null;
    /** Resolves at ACK(accepted) (or saved); rejects when the message fails first. @type {Promise<SendResult>} */
    accepted: Promise<SendResult>;
    /** Resolves once the message is in the database; rejects when it fails. @type {Promise<SendResult>} */
    saved: Promise<SendResult>;
    _resolveAccepted: (r: SendResult) => void;
    _rejectAccepted: (e: Error) => void;
    _resolveSaved: (r: SendResult) => void;
    _rejectSaved: (e: Error) => void;
    /** @returns {SendResult} */
    result(): SendResult;
    /**
     * @param {number} seq @param {string} serverMsgId @param {string} conversationId @param {number} sendAt
     * @returns {boolean} whether the state moved
     */
    _place(seq: number, serverMsgId: string, conversationId: string, sendAt: number): boolean;
    /**
     * _to moves the state forward (never back) and settles the promises.
     * @param {SendState} s
     * @returns {boolean} whether the state moved
     */
    _to(s: SendState): boolean;
}
export type OutboxRecord = import("./outbox.js").OutboxRecord;
export type SendBody = import("./outbox.js").SendBody;
export type SendState = "pending" | "accepted" | "saved" | "failed";
/**
 * where the server placed a message
 */
export type SendResult = {
    /**
     * its final seq in the conversation
     */
    seq: number;
    /**
     * the server's UUIDv7
     */
    serverMsgId: string;
    /**
     * "si_a_b" or "sg_group" (the accept time is out.sendAt)
     */
    conversationId: string;
};
export type OutgoingEvents = {
    /**
     * the new state
     */
    state: SendState;
};
import { Emitter } from './emitter.js';
