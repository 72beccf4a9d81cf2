// The WebSocket connection of the web client, on the JavaScript SDK
// (/assets/sdk/, sdk/js; docs/sdk.md): the SDK owns the frames, request
// matching, heartbeats, reconnect with backoff, the close codes, history
// pages, gap filling and the delivered ACKs; this module maps its events
// onto the client's handlers. Own messages go through the SDK's send, which
// resends them until saved — from IndexedDB after a reload, too.

import { IndexedDBOutbox, NexoClient, NexoError, backoffDelay } from './sdk/index.js';
import { PLATFORM_WEB } from './ids.js';

/** RequestError is a refused or failed request (the SDK's NexoError); reason is the error table's. */
export { NexoError as RequestError, backoffDelay };

/** Reconnect and request settings (milliseconds). */
export const Timing = {
  backoffBase: 500,
  backoffMax: 30000,
  requestTimeout: 15000,
};

/**
 * Connection keeps one WebSocket to /ws open for the session.
 *
 * handlers:
 *   open()                 — a connection is up (after a reconnect too)
 *   ready()                — connected and the outbox read: the SDK's
 *                            pendingMessages() lists what a previous page left
 *   message(m)             — the SDK's message stream: each message (or an
 *                            unavailable placeholder) once, in seq order
 *   receipt(e), typing(e)  — the SDK's receipt and typing events
 *   action(name, e)        — the SDK's edit, reaction, delete and readCounts events
 *   serverError(err)       — a server error that answers no request (a NexoError)
 *   state(s, info)         — 'connecting' | 'open' | 'waiting' {retryIn} | 'stopped' {reason, detail}
 *   gate(reason, detail)   — the session cannot go on as it is (kicked, the
 *                            token refused); the connection has stopped and
 *                            the client decides (refresh, sign-in, banner)
 */
export class Connection {
  constructor(tokenFn, _userIDFn, handlers) {
    this.h = handlers;
    this.status = 'stopped';
    this.stopInfo = null;
    // Messages come from the SDK's stream: once each, in seq order per
    // conversation, gaps filled, delivered ACKed; the page marks read.
    this.sdk = new NexoClient({
      url: location.origin,
      platformId: PLATFORM_WEB,
      getToken: () => tokenFn(),
      // A message typed before a reload or a crash is sent by the next page.
      outbox: typeof indexedDB === 'undefined' ? undefined : new IndexedDBOutbox({ name: 'nexo-web-outbox' }),
      minReconnectDelay: Timing.backoffBase,
      maxReconnectDelay: Timing.backoffMax,
      requestTimeout: Timing.requestTimeout,
    });
    this.sdk.on('state', (s) => {
      if (s === 'connected') {
        this.setState('open');
        this.h.open();
      } else if (s === 'connecting') {
        this.setState('connecting');
      } else {
        const info = this.stopInfo || { reason: 'stopped', detail: '' };
        this.stopInfo = null;
        this.setState('stopped', info);
      }
    });
    this.sdk.on('reconnecting', ({ delay }) => this.setState('waiting', { retryIn: delay }));
    this.sdk.on('message', (m) => this.h.message(m));
    this.sdk.on('receipt', (e) => this.h.receipt(e));
    this.sdk.on('typing', (e) => this.h.typing(e));
    for (const name of ['edit', 'reaction', 'delete', 'readCounts']) this.sdk.on(name, (e) => this.h.action(name, e));
    this.sdk.on('kicked', ({ reason, detail }) => {
      this.setState('stopped', { reason, detail });
      this.h.gate(reason, detail);
    });
    // The session ended: the token was refused and getToken had no other.
    this.sdk.on('error', (err) => {
      if (this.sdk.state !== 'disconnected') {
        this.h.serverError(err);
        return;
      }
      this.setState('stopped', { reason: err.reason, detail: err.detail });
      this.h.gate(err.reason, err.detail);
    });
    this.onOnline = () => { if (this.status === 'waiting') this.sdk.reconnect().catch(() => {}); };
  }

  get isOpen() { return this.sdk.state === 'connected'; }

  /** start connects (again) and keeps reconnecting until stop. */
  start() {
    window.addEventListener('online', this.onOnline);
    this.sdk.connect().then(() => this.h.ready(), () => { /* reported by the kicked/error events */ });
  }

  /** stop closes the connection and stops reconnecting. */
  stop(reason = 'stopped', detail = '') {
    window.removeEventListener('online', this.onOnline);
    this.stopInfo = { reason, detail };
    this.sdk.disconnect();
    this.setState('stopped', { reason, detail });
  }

  /** restart closes the current connection and opens a new one at once (a new token). */
  restart() {
    window.addEventListener('online', this.onOnline);
    this.sdk.reconnect().then(() => this.h.ready(), () => { /* reported by the kicked/error events */ });
  }

  setState(s, info = {}) {
    this.status = s;
    this.h.state(s, info);
  }

  /**
   * send queues an own message in the SDK (its parameters: recvId or
   * groupId, msgType, content, clientMsgId, atUserIds) and returns the
   * SDK's OutgoingMessage: resent after reconnects until saved or failed.
   */
  send(p) {
    return this.sdk.send(p);
  }
}
