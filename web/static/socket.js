// The WebSocket connection: requests matched to responses by msg_incr,
// pushes handed to the client, an application-level ping (a browser cannot
// see WebSocket pings), and reconnection with exponential backoff and
// jitter. docs/protocol.md is the contract.

import { GATE_REASONS, PLATFORM_WEB, Push } from './ids.js';

/** RequestError is a refused or failed request; reason is the error table's. */
export class RequestError extends Error {
  constructor(reason, detail, errCode = 0) {
    super(detail ? `${reason}: ${detail}` : reason);
    this.reason = reason;
    this.detail = detail || '';
    this.errCode = errCode;
  }
}

/** Backoff and heartbeat settings (milliseconds). */
export const Timing = {
  backoffBase: 500,
  backoffMax: 30000,
  // A connection that stayed open this long resets the backoff.
  stableAfter: 5000,
  pingEvery: 25000,
  pongWait: 10000,
  requestTimeout: 15000,
  // After a close 1012 (the server restarts) the client reconnects within
  // this, at a random point, so an instance's clients do not all land on
  // the next one at the same moment.
  restartJitter: 1000,
};

/** restartDelay is the wait before reconnecting after a close 1012 (or 1001). */
export function restartDelay(rand = Math.random, jitter = Timing.restartJitter) {
  return Math.round(rand() * jitter);
}

/**
 * backoffDelay is attempt n's wait: base·2ⁿ capped at max, of which a
 * random half is jitter ("equal jitter"), so clients dropped together do
 * not come back together.
 */
export function backoffDelay(attempt, base = Timing.backoffBase, max = Timing.backoffMax, rand = Math.random) {
  const d = Math.min(max, base * 2 ** Math.min(attempt, 20));
  return Math.round(d / 2 + rand() * (d / 2));
}

/**
 * Connection keeps one WebSocket to /ws open for the session.
 *
 * handlers:
 *   open()                 — a connection is up (after a reconnect too)
 *   push(frame)            — a 2xxx/3001 frame that is not a response
 *   state(s, info)         — 'connecting' | 'open' | 'waiting' {retryIn} | 'stopped' {reason, detail}
 *   gate(reason, detail)   — the server ended the session with a gate reason;
 *                            the connection has stopped and the client decides
 *   handshakeFailed()      — an attempt failed before opening; resolves to
 *                            false when retrying is pointless (the token is gone)
 */
export class Connection {
  constructor(tokenFn, userIDFn, handlers) {
    this.tokenFn = tokenFn;
    this.userIDFn = userIDFn;
    this.h = handlers;
    this.ws = null;
    this.incr = 0;
    this.waiting = new Map();
    this.attempt = 0;
    this.timer = 0;
    this.stopped = true;
    this.status = 'stopped';
    this.gateReason = null;
    this.onOnline = () => { if (this.status === 'waiting') this.connectNow(); };
  }

  get isOpen() { return this.ws !== null && this.ws.readyState === WebSocket.OPEN && this.status === 'open'; }

  /** start connects (again) and keeps reconnecting until stop. */
  start() {
    this.stopped = false;
    window.addEventListener('online', this.onOnline);
    this.connectNow();
  }

  /** stop closes the connection and stops reconnecting. */
  stop(reason = 'stopped', detail = '') {
    this.stopped = true;
    window.removeEventListener('online', this.onOnline);
    clearTimeout(this.timer);
    this.drop(1000, 'client stop');
    this.setState('stopped', { reason, detail });
  }

  /** restart closes the current connection and opens a new one at once (a new token). */
  restart() {
    this.attempt = 0;
    this.stopped = false;
    window.addEventListener('online', this.onOnline);
    this.drop(1000, 'token refreshed');
    this.connectNow();
  }

  setState(s, info = {}) {
    this.status = s;
    this.h.state(s, info);
  }

  connectNow() {
    clearTimeout(this.timer);
    if (this.stopped) return;
    const token = this.tokenFn();
    if (!token) {
      this.stop('token_missing');
      return;
    }
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const q = new URLSearchParams({ token, platform_id: String(PLATFORM_WEB), send_id: this.userIDFn(), operation_id: `web-${Date.now()}` });
    const ws = new WebSocket(`${scheme}//${location.host}/ws?${q}`);
    this.ws = ws;
    this.gateReason = null;
    let opened = false;
    let stableTimer = 0;
    this.setState('connecting');

    ws.onopen = () => {
      if (this.ws !== ws) return;
      opened = true;
      stableTimer = setTimeout(() => { this.attempt = 0; }, Timing.stableAfter);
      this.startHeartbeat(ws);
      this.setState('open');
      this.h.open();
    };
    ws.onmessage = (e) => {
      if (this.ws !== ws) return;
      this.lastHeard = Date.now();
      if (e.data === 'pong') return;
      let f;
      try {
        f = JSON.parse(e.data);
      } catch {
        return;
      }
      this.onFrame(f);
    };
    ws.onclose = (e) => {
      clearTimeout(stableTimer);
      if (this.ws !== ws) return;
      this.ws = null;
      this.stopHeartbeat();
      this.failWaiting(new RequestError('disconnected', 'the connection closed'));
      if (this.stopped) return;
      const reason = this.gateReason || (e.code === 1008 ? e.reason : '');
      if (reason && GATE_REASONS.has(reason) && reason !== 'too_many_requests') {
        this.stopped = true;
        this.setState('stopped', { reason, detail: this.gateDetail || '' });
        this.h.gate(reason, this.gateDetail || '');
        return;
      }
      if (opened && (e.code === 1012 || e.code === 1001)) {
        // The instance is shutting down; the load balancer sends the
        // reconnect to another one: go at once, with jitter.
        this.scheduleReconnect(restartDelay());
        return;
      }
      if (!opened) {
        // A refused handshake looks like any failed connection to a
        // browser: ask whether the token still works before retrying.
        Promise.resolve(this.h.handshakeFailed()).then((retry) => {
          if (this.ws === null && !this.stopped) {
            if (retry) this.scheduleReconnect();
            else this.stop('token_revoked');
          }
        });
        return;
      }
      this.scheduleReconnect();
    };
  }

  scheduleReconnect(wait = backoffDelay(this.attempt++)) {
    this.setState('waiting', { retryIn: wait });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connectNow(), wait);
  }

  /** drop closes the current socket without reconnecting from its close event. */
  drop(code, text) {
    const ws = this.ws;
    this.ws = null;
    this.stopHeartbeat();
    this.failWaiting(new RequestError('disconnected', 'the connection closed'));
    if (ws) {
      try { ws.close(code, text); } catch { /* already closing */ }
    }
  }

  startHeartbeat(ws) {
    this.stopHeartbeat();
    this.lastHeard = Date.now();
    this.pingTimer = setInterval(() => {
      if (this.ws !== ws) return;
      const sentAt = Date.now();
      try { ws.send('ping'); } catch { return; }
      clearTimeout(this.pongTimer);
      this.pongTimer = setTimeout(() => {
        // Nothing arrived since the ping: the connection is dead even if
        // the browser has not noticed (a sleeping laptop, a lost NAT entry).
        if (this.ws === ws && this.lastHeard < sentAt) {
          this.ws = null;
          this.stopHeartbeat();
          this.failWaiting(new RequestError('disconnected', 'no pong'));
          try { ws.close(4000, 'no pong'); } catch { /* ignore */ }
          this.scheduleReconnect();
        }
      }, Timing.pongWait);
    }, Timing.pingEvery);
  }

  stopHeartbeat() {
    clearInterval(this.pingTimer);
    clearTimeout(this.pongTimer);
  }

  onFrame(f) {
    const data = f.data || {};
    if (f.req_identifier < 2000 && this.waiting.has(f.msg_incr)) {
      const w = this.waiting.get(f.msg_incr);
      this.waiting.delete(f.msg_incr);
      clearTimeout(w.timer);
      if (f.err_code === 0) w.resolve(data);
      else w.reject(new RequestError(data.reason || f.err_msg, data.detail, f.err_code));
      return;
    }
    if (f.req_identifier === Push.KICK || (f.req_identifier === Push.ERROR && GATE_REASONS.has(data.reason))) {
      this.gateReason = data.reason || f.err_msg;
      this.gateDetail = data.detail || '';
    }
    // A gate error that answers a request still carries the request's
    // msg_incr; fail that request too.
    if (f.req_identifier === Push.ERROR && f.msg_incr && this.waiting.has(f.msg_incr)) {
      const w = this.waiting.get(f.msg_incr);
      this.waiting.delete(f.msg_incr);
      clearTimeout(w.timer);
      w.reject(new RequestError(data.reason || f.err_msg, data.detail, f.err_code));
    }
    this.h.push(f);
  }

  failWaiting(err) {
    for (const w of this.waiting.values()) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    this.waiting.clear();
  }

  /**
   * request sends a frame and resolves with the response's data, or
   * rejects with a RequestError: the server's reason, 'disconnected' when
   * the connection is not open or closes first, 'timeout'.
   */
  request(reqIdentifier, data, timeout = Timing.requestTimeout) {
    if (!this.isOpen) return Promise.reject(new RequestError('disconnected', 'not connected'));
    const msgIncr = String(++this.incr);
    const ws = this.ws;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.waiting.delete(msgIncr)) reject(new RequestError('timeout', `no answer within ${timeout / 1000} s`));
      }, timeout);
      this.waiting.set(msgIncr, { resolve, reject, timer });
      try {
        ws.send(JSON.stringify({ req_identifier: reqIdentifier, msg_incr: msgIncr, operation_id: `web-${msgIncr}`, data }));
      } catch (e) {
        this.waiting.delete(msgIncr);
        clearTimeout(timer);
        reject(new RequestError('disconnected', String(e)));
      }
    });
  }
}
