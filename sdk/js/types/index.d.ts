export { OutgoingMessage } from "./message.js";
export { HttpApi } from "./http.js";
export { backoffDelay } from "./backoff.js";
export { Emitter } from "./emitter.js";
export { NexoClient, userIdOf } from "./client.js";
export { MemoryOutbox, IndexedDBOutbox } from "./outbox.js";
export { CloseCode, GATE_REASONS, MsgType, NexoError, Push, RETRYABLE_SEND_REASONS, Req, SessionType, TOKEN_REASONS, groupConversationID, newClientMsgID, singleConversationID } from "./protocol.js";
