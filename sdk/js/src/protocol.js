// Wire constants of the Nexo WebSocket protocol (docs/protocol.md) and the
// error type every SDK call rejects with.

/** Request identifiers, client → server. */
export const Req = Object.freeze({
  NEWEST_SEQ: 1001,
  PULL_BY_SEQS: 1002,
  SEND: 1003,
  PULL_RANGE: 1005,
  MAX_READ_SEQ: 1006,
  ACK: 1101,
  REVOKE: 1102,
  TYPING: 1103,
  APP_STATE: 1104,
  SEARCH: 1105,
  EDIT: 1106,
  EDITS: 1107,
  DELETE: 1108,
  REACTION: 1109,
  READ_BY: 1110,
  REPORT: 1113,
});

/** Push identifiers, server → client. */
export const Push = Object.freeze({
  MSG: 2001,
  KICK: 2002,
  ACK: 2101,
  GROUP_NOTIFY: 2102,
  TYPING: 2103,
  READ_COUNTS: 2104,
  ERROR: 3001,
});

/** Session types (OpenIM's numbers). */
export const SessionType = Object.freeze({ SINGLE: 1, GROUP: 3 });

/** Message types a client sends; 1500 and above are the server's notifications. */
export const MsgType = Object.freeze({
  TEXT: 101,
  PICTURE: 102,
  VOICE: 103,
  VIDEO: 104,
  FILE: 105,
  AT_TEXT: 106,
  CUSTOM: 110,
  NOTIFICATION_MIN: 1500,
  REVOKE_NOTIFICATION: 1600,
  EDIT_NOTIFICATION: 1601,
  REACTION_NOTIFICATION: 1602,
  DELETE_NOTIFICATION: 1603,
  DELETE_SELF_NOTIFICATION: 1604,
});

/** Close codes the server sends (docs/protocol.md, "Close codes"). */
export const CloseCode = Object.freeze({
  NORMAL: 1000,
  SERVER_SHUTDOWN: 1001,
  POLICY: 1008,
  TOO_BIG: 1009,
  RESTART: 1012,
});

/** Reasons after which the server closes the connection (gate errors). */
export const GATE_REASONS = new Set(['unauthorized', 'token_expired', 'session_invalid', 'kicked', 'too_many_requests']);

/** Reasons that mean the token in use is no longer accepted: ask getToken() again. */
export const TOKEN_REASONS = new Set(['token_missing', 'token_invalid', 'token_expired', 'token_revoked', 'session_invalid', 'unauthorized']);

/**
 * Send failures after which the same client_msg_id is sent again: nothing
 * was written, or the answer was lost. Every other reason fails the
 * message for good (docs/errors.md).
 */
export const RETRYABLE_SEND_REASONS = new Set([
  'disconnected', 'timeout', 'server_busy', 'too_many_requests', 'internal_error',
  'token_expired', 'session_invalid', 'unauthorized', 'kicked',
]);

/**
 * NexoError is every refusal the SDK reports: `reason` is the server's
 * error reason (docs/errors.md) or one of the SDK's own: `disconnected`
 * (the connection closed before the answer), `timeout` (no answer in
 * time), `network_error` (HTTP could not reach the server), `http_<status>`
 * (an answer without Nexo's envelope).
 */
export class NexoError extends Error {
  /**
   * @param {string} reason
   * @param {string} [detail]
   * @param {{errCode?: number, status?: number, data?: Record<string, any>}} [extra]
   */
  constructor(reason, detail = '', extra = {}) {
    super(detail ? `${reason}: ${detail}` : reason);
    this.name = 'NexoError';
    /** The error table's reason, or the SDK's own. @type {string} */
    this.reason = reason;
    /** For people; never branch on it. @type {string} */
    this.detail = detail;
    /** The error table's err_code, 0 for the SDK's own reasons. @type {number} */
    this.errCode = extra.errCode || 0;
    /** The HTTP status for HTTP calls, 0 otherwise. @type {number} */
    this.status = extra.status || 0;
    /** The error frame's data (retry_after_ms, request_id, …). @type {Record<string, any>} */
    this.data = extra.data || {};
  }
}

/**
 * singleConversationID is "si_{min}_{max}" with '_' inside each user ID
 * written as '.', as the server builds it (domain.SingleConversationID).
 * @param {string} a
 * @param {string} b
 * @returns {string}
 */
export function singleConversationID(a, b) {
  if (b < a) [a, b] = [b, a];
  return `si_${a.replaceAll('_', '.')}_${b.replaceAll('_', '.')}`;
}

/**
 * groupConversationID is "sg_{group_id}".
 * @param {string} groupID
 * @returns {string}
 */
export function groupConversationID(groupID) {
  return `sg_${groupID}`;
}

/**
 * newClientMsgID returns a new client_msg_id: a UUIDv7 (RFC 9562: the
 * device's Unix ms in the first 48 bits, 74 random bits from
 * crypto.getRandomValues, which browsers offer on plain-HTTP pages too).
 * The server answers a retry of a recent UUIDv7 from its Redis record and
 * skips the database's duplicate lookup for it (docs/pipeline.md,
 * "Idempotency"); any other form of ID costs each send that lookup.
 * @returns {string}
 */
export function newClientMsgID() {
  const b = new Uint8Array(16);
  globalThis.crypto.getRandomValues(b);
  let ms = Date.now();
  for (let i = 5; i >= 0; i--) {
    b[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  b[6] = (b[6] & 0x0f) | 0x70; // version 7
  b[8] = (b[8] & 0x3f) | 0x80; // variant 10
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
