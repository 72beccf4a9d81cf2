// Identifiers and constants shared by the client's modules. The rules
// mirror domain/ids.go; the wire protocol is the SDK's (sdk/js).

/** Session types (OpenIM's numbers). */
export const SINGLE = 1;
export const GROUP = 3;

/** Message types the client sends. */
export const MSG_TEXT = 101;
export const MSG_AT_TEXT = 106;
export const MSG_PICTURE = 102;
export const MSG_FILE = 105;
/** msg_type 1500 and above are the server's notifications. */
export const MSG_NOTIFICATION_MIN = 1500;
/** A recall's announcement (content.custom names the recalled seq). */
export const MSG_REVOKE_NOTIFICATION = 1600;

/** The web platform (OpenIM's platform 5). */
export const PLATFORM_WEB = 5;

const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/** validID reports whether id is a user or group ID: 1–64 of [A-Za-z0-9_-]. */
export function validID(id) {
  return ID_RE.test(id);
}

/**
 * singleConversationID is "si_{min}_{max}" with '_' inside each ID written
 * as '.', exactly as domain.SingleConversationID builds it.
 */
export function singleConversationID(a, b) {
  if (b < a) [a, b] = [b, a];
  return `si_${a.replaceAll('_', '.')}_${b.replaceAll('_', '.')}`;
}

/** groupConversationID is "sg_{group_id}". */
export function groupConversationID(groupID) {
  return `sg_${groupID}`;
}

/**
 * parseConversationID returns {type, peers: [a, b]} for "si_" IDs and
 * {type, groupID} for "sg_" IDs, or null for anything else.
 */
export function parseConversationID(id) {
  if (id.startsWith('sg_')) return { type: GROUP, groupID: id.slice(3) };
  if (!id.startsWith('si_')) return null;
  const rest = id.slice(3);
  const cut = rest.indexOf('_');
  if (cut < 0) return null;
  const a = rest.slice(0, cut).replaceAll('.', '_');
  const b = rest.slice(cut + 1).replaceAll('.', '_');
  if (!validID(a) || !validID(b) || singleConversationID(a, b) !== id) return null;
  return { type: SINGLE, peers: [a, b] };
}

// newClientMsgID is the SDK's (a UUIDv7, which spares each send the
// server's database duplicate lookup).
export { newClientMsgID } from './sdk/index.js';
