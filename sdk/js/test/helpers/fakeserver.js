// A scriptable stand-in for a Nexo server: an HTTP server with the
// WebSocket at /ws (the `ws` package) and /user/info for token checks.
// Tests set handlers per req_identifier and push frames themselves.

import http from 'node:http';
import { WebSocketServer } from 'ws';

/** token builds an unsigned JWT-shaped token naming userId (the SDK only reads user_id). */
export function token(userId, tag = '') {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${b64({ alg: 'none' })}.${b64({ user_id: userId, platform_id: 5, tag })}.sig`;
}

/** frame is a server frame as Nexo encodes it. */
export function frame(reqIdentifier, data, extra = {}) {
  return JSON.stringify({ req_identifier: reqIdentifier, msg_incr: '', operation_id: '', err_code: 0, err_msg: '', data, ts: Date.now(), ...extra });
}

export class FakeServer {
  constructor() {
    /** @type {Array<{ws: import('ws').WebSocket, url: URL, frames: any[]}>} */
    this.conns = [];
    this.handlers = new Map();
    this.validTokens = null; // null: every token; else a Set
    this.refuseHandshake = 0; // refuse this many handshakes with 401 token_expired
    this.waiters = [];
    this.http = http.createServer((req, res) => {
      const u = new URL(req.url, 'http://x');
      if (u.pathname === '/user/info') {
        const tok = (req.headers.authorization || '').replace(/^Bearer /, '');
        if (this.validTokens && !this.validTokens.has(tok)) {
          res.writeHead(401, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ err_code: 1103, err_msg: 'token_expired', data: { reason: 'token_expired' } }));
          return;
        }
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ err_code: 0, err_msg: '', data: { user_id: 'alice' } }));
        return;
      }
      res.writeHead(404);
      res.end();
    });
    this.wss = new WebSocketServer({ noServer: true });
    this.http.on('upgrade', (req, sock, head) => {
      const u = new URL(req.url, 'http://x');
      const tok = u.searchParams.get('token');
      if (this.refuseHandshake > 0 || (this.validTokens && !this.validTokens.has(tok))) {
        if (this.refuseHandshake > 0) this.refuseHandshake--;
        sock.end('HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"err_code":1103,"err_msg":"token_expired","data":{"reason":"token_expired"}}');
        return;
      }
      this.wss.handleUpgrade(req, sock, head, (ws) => {
        const conn = { ws, url: u, frames: [] };
        this.conns.push(conn);
        ws.on('message', (buf) => {
          const text = buf.toString();
          if (text === 'ping') { ws.send('pong'); return; }
          const f = JSON.parse(text);
          conn.frames.push(f);
          this.notify();
          const h = this.handlers.get(f.req_identifier);
          const reply = (data, err) => {
            if (ws.readyState !== 1) return;
            if (err) ws.send(frame(f.req_identifier, { reason: err, ...(data || {}) }, { msg_incr: f.msg_incr, err_code: 1000, err_msg: err }));
            else ws.send(frame(f.req_identifier, data || {}, { msg_incr: f.msg_incr }));
          };
          if (h) h(f, reply, conn);
          else if (f.req_identifier === 1001) reply({ conversations: {}, next_cursor: '' });
          else if (f.req_identifier === 1101) reply({ ack_type: f.data.ack_type, conversation_id: f.data.conversation_id, seq: f.data.seq });
          else reply(null, 'unknown_request');
        });
        this.notify();
      });
    });
  }

  async start() {
    await new Promise((r) => this.http.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${this.http.address().port}`;
    return this;
  }

  async stop() {
    for (const c of this.conns) c.ws.terminate();
    this.wss.close();
    this.http.closeAllConnections?.();
    await new Promise((r) => this.http.close(r));
  }

  on(reqIdentifier, fn) { this.handlers.set(reqIdentifier, fn); }

  get last() { return this.conns[this.conns.length - 1]; }

  notify() {
    const w = this.waiters;
    this.waiters = [];
    for (const fn of w) fn();
  }

  /** until resolves once cond() is true (re-checked on every frame and connection), or rejects after ms. */
  until(cond, ms = 5000, what = 'condition') {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
      const check = () => {
        let v;
        try { v = cond(); } catch (e) { clearTimeout(timer); reject(e); return; }
        if (v) { clearTimeout(timer); resolve(v); } else this.waiters.push(check);
      };
      check();
    });
  }

  /** frames lists every request frame of every connection with req_identifier id. */
  frames(id) { return this.conns.flatMap((c) => c.frames.filter((f) => f.req_identifier === id)); }
}

/** waitFor polls cond every few ms until true or the deadline (for client-side state). */
export async function waitFor(cond, ms = 5000, what = 'condition') {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
