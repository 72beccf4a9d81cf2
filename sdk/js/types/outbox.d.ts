/**
 * @typedef {object} SendBody  the data of a 1003 send (docs/protocol.md)
 * @property {string} client_msg_id
 * @property {number} session_type  1 single chat, 3 group
 * @property {string} [recv_id]
 * @property {string} [group_id]
 * @property {number} msg_type
 * @property {Record<string, any>} content
 * @property {string[]} [at_user_ids]
 * @property {Record<string, any>} [quote]
 */
/**
 * @typedef {object} OutboxRecord  one message not yet saved
 * @property {string} clientMsgId
 * @property {string} owner       the sender's user ID ('' when the token does not name it)
 * @property {SendBody} body      what is sent, unchanged across retries
 * @property {'pending' | 'accepted'} state
 * @property {number} [seq]       from ACK(accepted)
 * @property {string} [serverMsgId]
 * @property {string} [conversationId]
 * @property {number} [sendAt]
 * @property {number} createdAt   Unix ms; records are resent in createdAt, then order, order
 * @property {number} order       a tie-breaker within one millisecond
 */
/**
 * @typedef {{put: OutboxRecord, delete?: undefined} | {delete: string, put?: undefined}} OutboxOp
 *   one outbox write: insert or replace a record, or remove one by clientMsgId
 */
/**
 * @typedef {object} Outbox  where unsaved messages wait; methods may be sync or async
 * @property {() => OutboxRecord[] | Promise<OutboxRecord[]>} list   every record, any order
 * @property {(rec: OutboxRecord) => void | Promise<void>} put       insert or replace by clientMsgId
 * @property {(clientMsgId: string) => void | Promise<void>} delete  remove (absent is fine)
 * @property {(ops: OutboxOp[]) => void | Promise<void>} [apply]     optional: several writes, in
 *   order, at once (IndexedDBOutbox: one transaction); without it they are made one by one
 */
/**
 * applyOutboxOps makes ops on outbox in order: in one call when it has
 * apply, else one put or delete after the other.
 * @param {Outbox} outbox
 * @param {OutboxOp[]} ops
 * @returns {Promise<void>}
 */
export function applyOutboxOps(outbox: Outbox, ops: OutboxOp[]): Promise<void>;
/**
 * MemoryOutbox keeps records in memory: they survive reconnects, not a
 * reload or a restart. The default.
 * @implements {Outbox}
 */
export class MemoryOutbox implements Outbox {
    /** @type {Map<string, OutboxRecord>} */
    records: Map<string, OutboxRecord>;
    /** @returns {OutboxRecord[]} */
    list(): OutboxRecord[];
    /** @param {OutboxRecord} rec */
    put(rec: OutboxRecord): void;
    /** @param {string} clientMsgId */
    delete(clientMsgId: string): void;
}
/**
 * IndexedDBOutbox keeps records in the browser's IndexedDB (database
 * `name`, object store "outbox"), so a message typed before a reload or a
 * crash is sent again, with its client_msg_id, by the next page's client.
 * Records carry their sender (owner); a client resends only its own user's.
 * @implements {Outbox}
 */
export class IndexedDBOutbox implements Outbox {
    /**
     * @param {{name?: string, indexedDB?: IDBFactory}} [opts]
     *   name: the database name (default "nexo-outbox"); indexedDB: the factory
     *   (default globalThis.indexedDB)
     */
    constructor(opts?: {
        name?: string;
        indexedDB?: IDBFactory;
    });
    name: string;
    factory: IDBFactory;
    /** @type {Promise<IDBDatabase> | null} */
    dbp: Promise<IDBDatabase> | null;
    /** @returns {Promise<IDBDatabase>} */
    db(): Promise<IDBDatabase>;
    /**
     * @template T
     * @param {IDBTransactionMode} mode
     * @param {(store: IDBObjectStore) => IDBRequest<T>} fn
     * @returns {Promise<T>}
     */
    run<T>(mode: IDBTransactionMode, fn: (store: IDBObjectStore) => IDBRequest<T>): Promise<T>;
    /** @returns {Promise<OutboxRecord[]>} */
    list(): Promise<OutboxRecord[]>;
    /** @param {OutboxRecord} rec */
    put(rec: OutboxRecord): Promise<void>;
    /** @param {string} clientMsgId */
    delete(clientMsgId: string): Promise<void>;
    /**
     * apply makes several writes in one transaction, in order.
     * @param {OutboxOp[]} ops
     */
    apply(ops: OutboxOp[]): Promise<void>;
}
/**
 * the data of a 1003 send (docs/protocol.md)
 */
export type SendBody = {
    client_msg_id: string;
    /**
     * 1 single chat, 3 group
     */
    session_type: number;
    recv_id?: string | undefined;
    group_id?: string | undefined;
    msg_type: number;
    content: Record<string, any>;
    at_user_ids?: string[] | undefined;
    quote?: Record<string, any> | undefined;
};
/**
 * one message not yet saved
 */
export type OutboxRecord = {
    clientMsgId: string;
    /**
     * the sender's user ID ('' when the token does not name it)
     */
    owner: string;
    /**
     * what is sent, unchanged across retries
     */
    body: SendBody;
    state: "pending" | "accepted";
    /**
     * from ACK(accepted)
     */
    seq?: number | undefined;
    serverMsgId?: string | undefined;
    conversationId?: string | undefined;
    sendAt?: number | undefined;
    /**
     * Unix ms; records are resent in createdAt, then order, order
     */
    createdAt: number;
    /**
     * a tie-breaker within one millisecond
     */
    order: number;
};
/**
 * one outbox write: insert or replace a record, or remove one by clientMsgId
 */
export type OutboxOp = {
    put: OutboxRecord;
    delete?: undefined;
} | {
    delete: string;
    put?: undefined;
};
/**
 * where unsaved messages wait; methods may be sync or async
 */
export type Outbox = {
    /**
     * every record, any order
     */
    list: () => OutboxRecord[] | Promise<OutboxRecord[]>;
    /**
     * insert or replace by clientMsgId
     */
    put: (rec: OutboxRecord) => void | Promise<void>;
    /**
     * remove (absent is fine)
     */
    delete: (clientMsgId: string) => void | Promise<void>;
    /**
     * optional: several writes, in
     * order, at once (IndexedDBOutbox: one transaction); without it they are made one by one
     */
    apply?: ((ops: OutboxOp[]) => void | Promise<void>) | undefined;
};
