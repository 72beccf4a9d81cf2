// Outboxes keep the messages a client sent that the server has not yet
// confirmed as saved, so they are sent again (with the same client_msg_id)
// after a reconnect — and, with a persistent outbox, after a page reload.

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
export async function applyOutboxOps(outbox, ops) {
  if (ops.length === 0) return;
  if (typeof outbox.apply === 'function') {
    await outbox.apply(ops);
    return;
  }
  for (const op of ops) {
    if (op.put) await outbox.put(op.put);
    else if (op.delete !== undefined) await outbox.delete(op.delete);
  }
}

/**
 * MemoryOutbox keeps records in memory: they survive reconnects, not a
 * reload or a restart. The default.
 * @implements {Outbox}
 */
export class MemoryOutbox {
  constructor() {
    /** @type {Map<string, OutboxRecord>} */
    this.records = new Map();
  }

  /** @returns {OutboxRecord[]} */
  list() { return [...this.records.values()].map((r) => structuredClone(r)); }

  /** @param {OutboxRecord} rec */
  put(rec) { this.records.set(rec.clientMsgId, structuredClone(rec)); }

  /** @param {string} clientMsgId */
  delete(clientMsgId) { this.records.delete(clientMsgId); }
}

/**
 * IndexedDBOutbox keeps records in the browser's IndexedDB (database
 * `name`, object store "outbox"), so a message typed before a reload or a
 * crash is sent again, with its client_msg_id, by the next page's client.
 * Records carry their sender (owner); a client resends only its own user's.
 * @implements {Outbox}
 */
export class IndexedDBOutbox {
  /**
   * @param {{name?: string, indexedDB?: IDBFactory}} [opts]
   *   name: the database name (default "nexo-outbox"); indexedDB: the factory
   *   (default globalThis.indexedDB)
   */
  constructor(opts = {}) {
    this.name = opts.name || 'nexo-outbox';
    this.factory = opts.indexedDB || globalThis.indexedDB;
    if (!this.factory) throw new Error('IndexedDBOutbox: no indexedDB in this environment');
    /** @type {Promise<IDBDatabase> | null} */
    this.dbp = null;
  }

  /** @returns {Promise<IDBDatabase>} */
  db() {
    if (!this.dbp) {
      this.dbp = new Promise((resolve, reject) => {
        const req = this.factory.open(this.name, 1);
        req.onupgradeneeded = () => { req.result.createObjectStore('outbox', { keyPath: 'clientMsgId' }); };
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
    }
    return this.dbp;
  }

  /**
   * @template T
   * @param {IDBTransactionMode} mode
   * @param {(store: IDBObjectStore) => IDBRequest<T>} fn
   * @returns {Promise<T>}
   */
  async run(mode, fn) {
    const db = await this.db();
    return new Promise((resolve, reject) => {
      const tx = db.transaction('outbox', mode);
      const req = fn(tx.objectStore('outbox'));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  }

  /** @returns {Promise<OutboxRecord[]>} */
  list() { return this.run('readonly', (s) => s.getAll()); }

  /** @param {OutboxRecord} rec */
  async put(rec) { await this.run('readwrite', (s) => s.put(rec)); }

  /** @param {string} clientMsgId */
  async delete(clientMsgId) { await this.run('readwrite', (s) => s.delete(clientMsgId)); }

  /**
   * apply makes several writes in one transaction, in order.
   * @param {OutboxOp[]} ops
   */
  async apply(ops) {
    await this.run('readwrite', (s) => {
      /** @type {IDBRequest<any>} */
      let last = /** @type {any} */ (null);
      for (const op of ops) last = op.put ? s.put(op.put) : s.delete(/** @type {string} */ (op.delete));
      return last;
    });
  }
}
