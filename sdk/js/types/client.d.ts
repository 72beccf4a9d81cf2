/**
 * userIdOf reads the user_id claim of a Nexo JWT ('' when it is not one).
 * Only to address the handshake and own messages: the server checks it.
 * @param {string} token
 * @returns {string}
 */
export function userIdOf(token: string): string;
/**
 * NexoClient is one user's session with a Nexo server. Events (on): state,
 * message, receipt, typing, recall, edit, reaction, delete, readCounts, kicked, group, error.
 * @extends {Emitter<ClientEvents>}
 */
export class NexoClient extends Emitter<ClientEvents> {
    /** conversationIdOfGroup is "sg_{groupId}". @param {string} groupId */
    static groupConversationID(groupId: string): string;
    /** @param {NexoClientOptions} opts */
    constructor(opts: NexoClientOptions);
    url: string;
    getToken: (hint?: {
        reason: string;
    }) => string | Promise<string>;
    platformId: number;
    WebSocketImpl: any;
    /** Where unsaved messages wait. @type {Outbox} */
    outbox: Outbox;
    log: {
        debug: (...args: any[]) => void;
        info: (...args: any[]) => void;
        warn: (...args: any[]) => void;
        error: (...args: any[]) => void;
    };
    minReconnectDelay: number;
    maxReconnectDelay: number;
    requestTimeout: number;
    pingInterval: number;
    pongTimeout: number;
    sendWindow: number;
    autoAckDelivered: boolean;
    emitPlaceholders: boolean;
    pendingRetryDelay: number;
    syncTimeout: number;
    stream: boolean;
    random: () => number;
    /** The HTTP routes: users, presence, groups, conversations, search (and what later features add). */
    http: HttpApi;
    /** The connection's state; every change is a "state" event. @type {ConnectionState} */
    state: ConnectionState;
    /** The signed-in user, read from the token ('' before the first connect). @type {string} */
    userId: string;
    /** The token in use (the last getToken() answer). @type {string} */
    token: string;
    /** @type {any} */
    ws: any;
    _wanted: boolean;
    _gen: number;
    _attempt: number;
    _authFailures: number;
    /** @type {string} why the next getToken() is asked for a fresh token */
    _tokenHint: string;
    /** @type {any} */
    _timer: any;
    /** @type {any} */
    _pingTimer: any;
    /** @type {any} */
    _pongTimer: any;
    _lastHeard: number;
    _incr: number;
    /** @type {Map<string, {resolve: (d: any) => void, reject: (e: Error) => void, timer: any}>} */
    _waiting: Map<string, {
        resolve: (d: any) => void;
        reject: (e: Error) => void;
        timer: any;
    }>;
    /** @type {{reason: string, detail: string} | null} the gate frame before a close */
    _gate: {
        reason: string;
        detail: string;
    } | null;
    /** @type {Array<{resolve: () => void, reject: (e: Error) => void}>} */
    _connectWaiters: Array<{
        resolve: () => void;
        reject: (e: Error) => void;
    }>;
    /** @type {Map<string, Timeline>} */
    _convs: Map<string, Timeline>;
    _synced: boolean;
    /** @type {Array<() => void>} history calls waiting for the first sync */
    _syncWaiters: Array<() => void>;
    /** the last sync had no cursors: new conversations start at their first seq seen */
    _cursorless: boolean;
    /** @type {Map<string, OutgoingMessage>} every message not yet saved or failed, by clientMsgId */
    _outgoing: Map<string, OutgoingMessage>;
    /** @type {string[]} clientMsgIds of pending (unaccepted) messages, in send order */
    _queue: string[];
    /** @type {Set<string>} clientMsgIds of requests on the wire */
    _inFlight: Set<string>;
    /** @type {Set<string>} clientMsgIds this client sent (theirs are not emitted as "message") */
    _ownIds: Set<string>;
    _pausedUntil: number;
    /** @type {any} */
    _pauseTimer: any;
    _order: number;
    /** @type {Promise<void>} serialises outbox writes */
    _outboxChain: Promise<void>;
    /** @type {OutboxOp[]} writes waiting for the next outbox flush */
    _outboxPending: OutboxOp[];
    /** @type {Promise<void> | null} */
    _outboxLoaded: Promise<void> | null;
    /**
     * connect opens the connection and keeps it open (reconnecting) until
     * disconnect or a kick. Resolves once connected (and the outbox read);
     * rejects with a NexoError
     * when the session ends first (kicked, the token refused for good,
     * disconnect()).
     * @returns {Promise<void>}
     */
    connect(): Promise<void>;
    /**
     * reconnect replaces the connection at once (after a token refresh, or
     * when the network is back), resetting the backoff; connects if stopped.
     * @returns {Promise<void>} as connect()
     */
    reconnect(): Promise<void>;
    /** disconnect closes the connection and stops reconnecting; unsaved messages wait in the outbox for the next connect. */
    disconnect(): void;
    /** @param {ConnectionState} s */
    _setState(s: ConnectionState): void;
    /** @param {Error | null} err */
    _settleConnect(err: Error | null): void;
    /** wsURL is {url}/ws with the handshake's query. @param {string} token */
    _wsURL(token: string): string;
    _open(): Promise<void>;
    /** @param {string} token */
    _setToken(token: string): void;
    /** @param {any} ws */
    _onOpen(ws: any): void;
    /**
     * @param {number} code @param {string} text @param {boolean} opened
     * @param {string} token the token this connection used
     * @param {boolean} hintedSame getToken answered a refresh request with the refused token
     */
    _onClose(code: number, text: string, opened: boolean, token: string, hintedSame: boolean): void;
    /**
     * _authFailed asks getToken for a fresh token and reconnects; when it
     * keeps handing back a refused token the session ends.
     * @param {string} reason @param {string} detail @param {boolean} hintedSame
     */
    _authFailed(reason: string, detail: string, hintedSame: boolean): void;
    /** _end stops for good (until connect is called again) and reports err. @param {NexoError} err */
    _end(err: NexoError): void;
    _scheduleReconnect(): void;
    /** _dropSocket closes the current socket without its close event doing anything. @param {number} code @param {string} text */
    _dropSocket(code: number, text: string): void;
    /** @param {any} ws */
    _startHeartbeat(ws: any): void;
    _stopHeartbeat(): void;
    /** @param {Error} err */
    _failWaiting(err: Error): void;
    /**
     * request sends one WebSocket request and resolves with its response's
     * data; rejects with a NexoError (the server's reason; `disconnected`
     * when not connected or closed first; `timeout`).
     * @param {number} reqIdentifier
     * @param {Record<string, any>} data
     * @param {{timeout?: number}} [opts]
     * @returns {Promise<any>}
     */
    request(reqIdentifier: number, data: Record<string, any>, opts?: {
        timeout?: number;
    }): Promise<any>;
    /** @param {any} f a decoded frame */
    _onFrame(f: any): void;
    /** @param {number} gen */
    _afterConnect(gen: number): Promise<void>;
    /**
     * _sync reads every conversation's newest seqs (1001, paged), anchors the
     * conversations seen for the first time at their delivered cursor, and
     * fills every one whose max_seq is above what was emitted.
     */
    _sync(): Promise<void>;
    /** @param {string} id */
    _conv(id: string): Timeline;
    /** @param {Timeline} c @param {number} hi */
    _anchor(c: Timeline, hi: number): void;
    /** @param {any} m */
    _onPushedMessage(m: any): void;
    /**
     * _hold keeps a message until every seq below it is out. An own message
     * (sent by this client) resolves its send and is not emitted.
     * @param {Timeline} c @param {any} m
     */
    _hold(c: Timeline, m: any): void;
    /** _drain emits the buffered run right above hi. @param {Timeline} c */
    _drain(c: Timeline): void;
    /** @param {Message} m */
    _emitMessage(m: Message): void;
    /**
     * _fill pulls (1005) from hi+1 until the conversation's max seq and every
     * buffered message are reached; one fill per conversation at a time.
     * @param {Timeline} c
     */
    _fill(c: Timeline): Promise<void>;
    /** @param {Timeline} c */
    _retryFill(c: Timeline): void;
    /** @param {any} d */
    _onGroupNotify(d: any): void;
    /** @param {Timeline} c */
    _scheduleAck(c: Timeline): void;
    /** @param {any} d */
    _onAckPush(d: any): void;
    /**
     * send queues a message and returns at once. It is sent as soon as the
     * connection is up and sent again, with the same clientMsgId, after every
     * reconnect until the server has saved it or refused it for good.
     * @param {SendParams} p
     * @returns {OutgoingMessage}
     */
    send(p: SendParams): OutgoingMessage;
    /**
     * pendingMessages lists the messages not yet saved (or failed), in send
     * order — after a reload, the ones an IndexedDB outbox brought back.
     * @returns {OutgoingMessage[]}
     */
    pendingMessages(): OutgoingMessage[];
    /** @param {OutboxRecord} rec */
    _track(rec: OutboxRecord): OutgoingMessage;
    /** _loadOutbox brings back the records a previous client left (IndexedDB). */
    _loadOutbox(): Promise<void>;
    /**
     * _outboxWrite queues one outbox write. Writes queued while an earlier
     * flush runs go together in the next one — one IndexedDB transaction for
     * a burst of sends instead of one each — so a reload soon after a burst
     * finds it in the outbox; writes still apply in the order they were made.
     * @param {OutboxOp} op
     */
    _outboxWrite(op: OutboxOp): void;
    /** _pump transmits queued messages in order, sendWindow at a time. */
    _pump(): void;
    /** @param {string} id */
    _queueRemove(id: string): void;
    /** @param {OutgoingMessage} out */
    _transmit(out: OutgoingMessage): Promise<void>;
    /** @param {OutgoingMessage} out @param {any} ack */
    _accepted(out: OutgoingMessage, ack: any): void;
    /** @param {OutgoingMessage} out */
    _finishSaved(out: OutgoingMessage): void;
    /** @param {OutgoingMessage} out @param {NexoError} err */
    _fail(out: OutgoingMessage, err: NexoError): void;
    /** @param {any} d a save_failed error's data */
    _onSaveFailed(d: any): void;
    /**
     * pull reads a window of a conversation's history (1005; HTTP GET
     * /msg/pull when not connected): from `from` up, or the `limit` seqs
     * ending at `to`, or the newest `limit`. It does not touch the message
     * stream: use it to show history.
     * @param {string} conversationId
     * @param {{from?: number, to?: number, limit?: number}} [range]
     * @returns {Promise<PullResult>}
     */
    pull(conversationId: string, range?: {
        from?: number;
        to?: number;
        limit?: number;
    }): Promise<PullResult>;
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
    history(conversationId: string, opts?: {
        before?: number;
        limit?: number;
    }): Promise<HistoryPage>;
    /** _whenSynced resolves after the next sync, or after ms. @param {number} ms */
    _whenSynced(ms: number): Promise<any>;
    /**
     * markRead moves the read cursor of conversationId to seq (1101 read;
     * the other side gets a receipt). Never beyond what the user holds.
     * @param {string} conversationId @param {number} seq
     * @returns {Promise<{ack_type: string, conversation_id: string, seq: number}>}
     */
    markRead(conversationId: string, seq: number): Promise<{
        ack_type: string;
        conversation_id: string;
        seq: number;
    }>;
    /**
     * typing tells the conversation's other members that the user is (no
     * longer) typing (1103; at most 2 a second, else too_many_requests).
     * @param {string} conversationId @param {boolean} isTyping
     * @returns {Promise<{delivered: number}>}
     */
    typing(conversationId: string, isTyping: boolean): Promise<{
        delivered: number;
    }>;
    /**
     * recall revokes a message (1102): its sender within 2 minutes, a group's
     * owner and admins any time. Everyone then gets a recall event.
     * @param {string} conversationId @param {number} seq
     */
    recall(conversationId: string, seq: number): Promise<any>;
    /** setBackground tells the server whether the app is in the background (1104; offline push). @param {boolean} background */
    setBackground(background: boolean): Promise<any>;
    /**
     * conversations reads the conversation list (GET /conversation/list),
     * every page: pinned first, then by newest message.
     * @param {{max?: number}} [opts]  max: stop after this many (default 1000)
     * @returns {Promise<any[]>}
     */
    conversations(opts?: {
        max?: number;
    }): Promise<any[]>;
    /**
     * newestSeqs reads {max_seq, min_seq, read_seq, delivered_seq} of the
     * given conversations (1001).
     * @param {string[]} conversationIds
     * @returns {Promise<Record<string, {max_seq: number, min_seq: number, read_seq: number, delivered_seq: number}>>}
     */
    newestSeqs(conversationIds: string[]): Promise<Record<string, {
        max_seq: number;
        min_seq: number;
        read_seq: number;
        delivered_seq: number;
    }>>;
    /**
     * search finds messages (WS 1105 when connected, else POST /msg/search):
     * {keyword, conversation_id?, sender_id?, msg_types?, from?, to?, cursor?, limit?, order?}.
     * @param {Record<string, any>} query
     * @returns {Promise<{results: any[], next_cursor: string}>}
     */
    search(query: Record<string, any>): Promise<{
        results: any[];
        next_cursor: string;
    }>;
    /**
     * _action sends a message action over the WebSocket (it answers as the
     * HTTP route) or, when not connected, over HTTP.
     * @param {number} req @param {'GET' | 'POST'} method @param {string} path @param {Record<string, any>} data
     */
    _action(req: number, method: "GET" | "POST", path: string, data: Record<string, any>): Promise<any>;
    /**
     * edit replaces the text of the user's own text message (101/106) within
     * msg.edit_window; everyone gets an "edit" event (1601) in seq order.
     * @param {string} conversationId @param {number} seq @param {{text: string}} content
     * @returns {Promise<any>} the server's answer (edit_version, edited_at, …)
     */
    edit(conversationId: string, seq: number, content: {
        text: string;
    }): Promise<any>;
    /**
     * edits lists a message's earlier versions, oldest first (1107, GET /msg/edits).
     * @param {string} conversationId @param {number} seq
     * @returns {Promise<any>}
     */
    edits(conversationId: string, seq: number): Promise<any>;
    /**
     * deleteMessages deletes 1–100 seqs, all or none: scope "self" hides them
     * for this user's devices (a "delete" event in the user's own
     * conversation), "everyone" leaves tombstones for all (own messages, or
     * any for a group's owner and admins).
     * @param {string} conversationId @param {number[]} seqs @param {'self' | 'everyone'} [scope]
     * @returns {Promise<any>}
     */
    deleteMessages(conversationId: string, seqs: number[], scope?: "self" | "everyone"): Promise<any>;
    /**
     * react adds (or with op "remove" takes back) one emoji on a message;
     * everyone gets a "reaction" event with the count after the change.
     * @param {string} conversationId @param {number} seq @param {string} emoji @param {'add' | 'remove'} [op]
     * @returns {Promise<any>}
     */
    react(conversationId: string, seq: number, emoji: string, op?: "add" | "remove"): Promise<any>;
    /**
     * readBy tells who read a message: {read_count, member_count,
     * read_user_ids, unread_user_ids, next_cursor} (a page of at most 500).
     * @param {string} conversationId @param {number} seq @param {{cursor?: string, limit?: number}} [page]
     * @returns {Promise<{read_count: number, member_count: number, read_user_ids: string[], unread_user_ids: string[], next_cursor: string}>}
     */
    readBy(conversationId: string, seq: number, page?: {
        cursor?: string;
        limit?: number;
    }): Promise<{
        read_count: number;
        member_count: number;
        read_user_ids: string[];
        unread_user_ids: string[];
        next_cursor: string;
    }>;
    /**
     * report reports a message to the moderators (docs/moderation.md):
     * → {report_id, status, created_at, duplicate}.
     * @param {string} conversationId @param {number} seq @param {string} reason
     * @returns {Promise<any>}
     */
    report(conversationId: string, seq: number, reason: string): Promise<any>;
    /**
     * upload stores a file (POST /object/upload, docs/media.md) and resolves
     * with the object; send it as a reference, e.g. `{msgType: 102, content:
     * {image: {object_id}}}`. onProgress(sent, total) follows the upload.
     * @param {Blob} file
     * @param {{name?: string, purpose?: 'message' | 'avatar', onProgress?: (sent: number, total: number) => void, signal?: AbortSignal}} [opts]
     * @returns {Promise<any>}
     */
    upload(file: Blob, opts?: {
        name?: string;
        purpose?: "message" | "avatar";
        onProgress?: (sent: number, total: number) => void;
        signal?: AbortSignal;
    }): Promise<any>;
    /** objectUrl: a signed URL of an object the user may see → {url, expires_at}. @param {string} objectId @param {'original' | 'thumbnail'} [variant] */
    objectUrl(objectId: string, variant?: "original" | "thumbnail"): Promise<{
        url: string;
        expires_at: number;
    }>;
    /** @param {string} [userId] */
    userInfo(userId?: string): Promise<any>;
    /** @param {Record<string, any>} fields */
    updateUser(fields: Record<string, any>): Promise<any>;
    /** @param {string} keyword @param {number} [limit] */
    searchUsers(keyword: string, limit?: number): Promise<any>;
    /** @param {string[]} userIds */
    presence(userIds: string[]): Promise<any>;
    /** @param {Record<string, any>} body */
    createGroup(body: Record<string, any>): Promise<any>;
    /** @param {string} groupId */
    joinGroup(groupId: string): Promise<any>;
    /** @param {string} groupId @param {string[]} userIds */
    inviteToGroup(groupId: string, userIds: string[]): Promise<any>;
    /** @param {string} groupId @param {string[]} userIds */
    kickFromGroup(groupId: string, userIds: string[]): Promise<any>;
    /** @param {string} groupId */
    quitGroup(groupId: string): Promise<any>;
    /** @param {string} groupId */
    dismissGroup(groupId: string): Promise<any>;
    /** @param {Record<string, any>} body */
    updateGroup(body: Record<string, any>): Promise<any>;
    /** @param {string} groupId */
    groupInfo(groupId: string): Promise<any>;
    /** @param {string} groupId @param {{offset?: number, limit?: number}} [page] */
    groupMembers(groupId: string, page?: {
        offset?: number;
        limit?: number;
    }): Promise<any>;
    /**
     * groups lists every group of the caller (GET /group/list, every page).
     * @returns {Promise<any[]>}
     */
    groups(): Promise<any[]>;
    /** @param {string} keyword @param {number} [limit] */
    searchGroups(keyword: string, limit?: number): Promise<any>;
    /** @param {{reason: string} | undefined} hint */
    _httpToken(hint: {
        reason: string;
    } | undefined): Promise<string>;
}
export type Outbox = import("./outbox.js").Outbox;
export type OutboxRecord = import("./outbox.js").OutboxRecord;
export type OutboxOp = import("./outbox.js").OutboxOp;
export type SendBody = import("./outbox.js").SendBody;
export type SendResult = import("./message.js").SendResult;
export type ConnectionState = "disconnected" | "connecting" | "connected";
/**
 * where the SDK reports what it does (console fits)
 */
export type Logger = {
    debug?: ((...args: any[]) => void) | undefined;
    info?: ((...args: any[]) => void) | undefined;
    warn?: ((...args: any[]) => void) | undefined;
    error?: ((...args: any[]) => void) | undefined;
};
export type NexoClientOptions = {
    /**
     * the server's HTTP base ("https://chat.example.com"); the WebSocket is {url}/ws
     */
    url: string;
    /**
     *   the access token (POST /auth/login). Called before every connection
     *   attempt and HTTP call without a token yet; `hint.reason` (token_expired,
     *   session_invalid, token_revoked, …) says the last one was refused: return a fresh one.
     */
    getToken: (hint?: {
        reason: string;
    }) => string | Promise<string>;
    /**
     * the token's platform (5 web, 1 iOS, 2 Android, …)
     */
    platformId: number;
    /**
     * a WebSocket constructor (default globalThis.WebSocket; in Node 20 pass the `ws` package's)
     */
    WebSocket?: any;
    /**
     * where unsaved messages wait (default a MemoryOutbox; IndexedDBOutbox in browsers survives reloads)
     */
    outbox?: import("./outbox.js").Outbox | undefined;
    /**
     * default silent
     */
    logger?: Logger | undefined;
    /**
     * first backoff window in ms (default 500)
     */
    minReconnectDelay?: number | undefined;
    /**
     * backoff cap in ms (default 30000)
     */
    maxReconnectDelay?: number | undefined;
    /**
     * ms to wait for a response (default 15000)
     */
    requestTimeout?: number | undefined;
    /**
     * ms between application pings (default 25000)
     */
    pingInterval?: number | undefined;
    /**
     * ms without any frame after a ping before the connection counts as dead (default 10000)
     */
    pongTimeout?: number | undefined;
    /**
     * new messages in flight at once (default 1: strict send order even when the server refuses one for a while)
     */
    sendWindow?: number | undefined;
    /**
     * ACK `delivered` for the contiguous prefix emitted (default true)
     */
    autoAckDelivered?: boolean | undefined;
    /**
     * emit unavailable seqs as placeholder messages (default true; false skips them silently)
     */
    emitPlaceholders?: boolean | undefined;
    /**
     * ms before pulling again a seq still in flight on the server (default 1000)
     */
    pendingRetryDelay?: number | undefined;
    /**
     * false: no message stream (no sync, no "message" events, no delivered ACKs) for an app
     * that orders pushes itself from "push" events (default true)
     */
    stream?: boolean | undefined;
    /**
     * ms to wait for the newest seqs after a connect before messages flow without them (default 5000)
     */
    syncTimeout?: number | undefined;
    /**
     * default globalThis.fetch
     */
    fetch?: typeof fetch | undefined;
    /**
     * uniform [0, 1) for jitter (tests)
     */
    random?: (() => number) | undefined;
};
/**
 * a message as the server pushes and pulls it (docs/protocol.md, 2001)
 */
export type Message = {
    conversation_id: string;
    seq: number;
    /**
     * unavailable: a placeholder, the seq will never hold a message; deleted: a tombstone
     */
    status: "normal" | "revoked" | "deleted" | "unavailable";
    server_msg_id?: string | undefined;
    client_msg_id?: string | undefined;
    sender_id?: string | undefined;
    recv_id?: string | undefined;
    group_id?: string | undefined;
    session_type?: number | undefined;
    msg_type?: number | undefined;
    content?: Record<string, any> | undefined;
    at_user_ids?: string[] | undefined;
    send_at?: number | undefined;
    /**
     * an edited message's version (pulls)
     */
    edit_version?: number | undefined;
    edited_at?: number | undefined;
    /**
     * (pulls)
     */
    reactions?: {
        emoji: string;
        count: number;
        me: boolean;
    }[] | undefined;
    /**
     * the quoted message's snapshot
     */
    quote?: {
        seq: number;
        sender_id?: string;
        msg_type?: number;
        preview?: string;
        status?: string;
    } | undefined;
};
export type ReceiptEvent = {
    conversationId: string;
    userId: string;
    ackType: "delivered" | "read";
    seq: number;
};
export type TypingEvent = {
    conversationId: string;
    userId: string;
    typing: boolean;
};
export type RecallEvent = {
    conversationId: string;
    seq: number;
    serverMsgId: string;
    senderId: string;
    revokerId: string;
    revokedAt: number;
    notification: Message;
};
export type KickedEvent = {
    reason: string;
    detail: string;
};
/**
 * an edit (1601): show `content` when editVersion is above the one held
 */
export type EditEvent = {
    conversationId: string;
    seq: number;
    editorId: string;
    editVersion: number;
    editedAt: number;
    content: Record<string, any>;
    notification: Message;
};
/**
 * a reaction (1602): `count` is the emoji's count after the change
 */
export type ReactionEvent = {
    conversationId: string;
    seq: number;
    userId: string;
    emoji: string;
    op: "add" | "remove";
    count: number;
    notification: Message;
};
/**
 * a delete (1603 everyone: tombstones; 1604 self: hide them)
 */
export type DeleteEvent = {
    conversationId: string;
    seqs: number[];
    scope: "everyone" | "self";
    deleterId: string;
    deletedAt: number;
    notification: Message;
};
/**
 * read counts of the user's own group messages (2104)
 */
export type ReadCountsEvent = {
    conversationId: string;
    counts: Array<{
        seq: number;
        read_count: number;
        member_count: number;
    }>;
};
export type ClientEvents = {
    state: ConnectionState;
    /**
     * each message once, per conversation in seq order (placeholders included)
     */
    message: Message;
    receipt: ReceiptEvent;
    typing: TypingEvent;
    recall: RecallEvent;
    kicked: KickedEvent;
    /**
     * after its 1601 "message"
     */
    edit: EditEvent;
    /**
     * after its 1602 "message"
     */
    reaction: ReactionEvent;
    /**
     * after its 1603/1604 "message"
     */
    delete: DeleteEvent;
    readCounts: ReadCountsEvent;
    /**
     * a group notification (msg_type 1500–1599 in a group), after its "message"
     */
    group: Message;
    /**
     * a failure the SDK cannot attach to a call (sync, the session ended, a 3001 error push that answers no request)
     */
    error: NexoError;
    /**
     * a reconnect is scheduled after `delay` ms
     */
    reconnecting: ReconnectingEvent;
    /**
     * every push frame (2xxx, 3001) as it arrived, before the SDK handles it
     */
    push: any;
};
export type ReconnectingEvent = {
    delay: number;
    attempt: number;
};
export type SendParams = {
    /**
     * the peer of a single chat (exactly one of recvId, groupId)
     */
    recvId?: string | undefined;
    groupId?: string | undefined;
    /**
     * 101 text, 102 picture, 103 voice, 104 video, 105 file, 106 at-text (mentions), 110 custom
     */
    msgType: number;
    /**
     * the message body, e.g. text: "hi" for 101
     */
    content: Record<string, any>;
    /**
     * default a new random ID; reuse one only to retry the same message
     */
    clientMsgId?: string | undefined;
    /**
     * reply to this seq of the same conversation (the server stores a snapshot; quote_unavailable when the caller cannot see it)
     */
    quote?: {
        seq: number;
    } | undefined;
    atUserIds?: string[] | undefined;
};
export type PullResult = {
    /**
     * ascending by seq; placeholders for unavailable seqs
     */
    messages: Message[];
    minSeq: number;
    maxSeq: number;
    /**
     * seqs accepted but not saved yet ("not yet")
     */
    pendingSeqs: number[];
};
export type HistoryPage = {
    /**
     * ascending by seq, all at or below the page's `end`; placeholders for unavailable seqs
     */
    messages: Message[];
    /**
     * the highest seq the page covers (0: nothing to show)
     */
    end: number;
    /**
     * false once the page reaches the caller's first visible seq (min_seq)
     */
    hasMore: boolean;
    minSeq: number;
    maxSeq: number;
};
import { Emitter } from './emitter.js';
import { HttpApi } from './http.js';
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
declare class Timeline {
    /** @param {string} id */
    constructor(id: string);
    id: string;
    /** whether hi is known; before, arrivals wait in `buffer` */
    anchored: boolean;
    /** every seq ≤ hi has been emitted (or skipped) */
    hi: number;
    /** seqs ≤ start are history (client.history), above it the stream */
    start: number;
    maxSeq: number;
    /** @type {Map<number, Message | null>} seq → message waiting for the seqs below it; null: an own message (not emitted) */
    buffer: Map<number, Message | null>;
    filling: boolean;
    fillAgain: boolean;
    /** @type {any} */
    retryTimer: any;
    /** @type {any} */
    ackTimer: any;
    acked: number;
}
import { OutgoingMessage } from './message.js';
import { NexoError } from './protocol.js';
export {};
