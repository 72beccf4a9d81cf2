// Unit tests against a fake server: the connection state machine, backoff,
// every close code, sends and their states, the outbox, and the ordered,
// exactly-once message stream.

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import WebSocket from 'ws';

import { MemoryOutbox, NexoClient, backoffDelay, newClientMsgID } from '../src/index.js';
import { FakeServer, frame, token, waitFor } from './helpers/fakeserver.js';

/** @type {FakeServer} */
let srv;
/** @type {NexoClient[]} */
let clients = [];

beforeEach(async () => { srv = await new FakeServer().start(); });
afterEach(async () => {
  for (const c of clients) c.disconnect();
  clients = [];
  await srv.stop();
});

function client(opts = {}) {
  const c = new NexoClient({
    url: srv.url, platformId: 5, WebSocket, getToken: () => token('alice'),
    minReconnectDelay: 10, maxReconnectDelay: 50, random: () => 0.5, pendingRetryDelay: 30, ...opts,
  });
  clients.push(c);
  return c;
}

/** accept answers 1003 sends with accepted ACKs at growing seqs. */
function acceptSends(conv = 'si_alice_bob', start = 1, ackType = 'accepted') {
  let seq = start;
  const byId = new Map();
  srv.on(1003, (f, reply) => {
    const id = f.data.client_msg_id;
    if (!byId.has(id)) byId.set(id, seq++);
    reply({ ack_type: ackType, server_msg_id: `s-${byId.get(id)}`, client_msg_id: id, conversation_id: conv, seq: byId.get(id), send_at: 1 });
  });
  return byId;
}

function msg(seq, conv = 'si_alice_bob', extra = {}) {
  return { server_msg_id: `s-${seq}`, client_msg_id: `b-${seq}`, conversation_id: conv, seq, sender_id: 'bob', recv_id: 'alice', session_type: 1, msg_type: 101, content: { text: `m${seq}` }, status: 'normal', send_at: seq, ...extra };
}

describe('backoff', () => {
  test('full jitter: uniform in [0, min·2^n] capped at max', () => {
    assert.equal(backoffDelay(0, 500, 30000, () => 0), 0);
    assert.equal(backoffDelay(0, 500, 30000, () => 0.999999), 499);
    assert.equal(backoffDelay(3, 500, 30000, () => 0.5), 2000);
    assert.equal(backoffDelay(20, 500, 30000, () => 0.5), 15000);
    assert.equal(backoffDelay(1000, 500, 30000, () => 0.999999), 29999);
    for (let i = 0; i < 1000; i++) {
      const d = backoffDelay(i % 10, 100, 5000);
      assert.ok(d >= 0 && d < Math.min(5000, 100 * 2 ** (i % 10)), `delay ${d}`);
    }
  });
});

describe('newClientMsgID', () => {
  test('is a UUIDv7 made now, a new one each time', () => {
    const before = Date.now();
    const ids = Array.from({ length: 1000 }, () => newClientMsgID());
    const after = Date.now();
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) {
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
      assert.ok(ms >= before && ms <= after, `time ${ms} not within [${before}, ${after}]`);
    }
  });
});

describe('connection state machine', () => {
  test('connect: connecting then connected, handshake carries token and platform_id', async () => {
    const c = client();
    const states = [];
    c.on('state', (s) => states.push(s));
    assert.equal(c.state, 'disconnected');
    await c.connect();
    assert.deepEqual(states, ['connecting', 'connected']);
    assert.equal(c.state, 'connected');
    assert.equal(srv.last.url.searchParams.get('token'), token('alice'));
    assert.equal(srv.last.url.searchParams.get('platform_id'), '5');
    assert.equal(c.userId, 'alice');
    c.disconnect();
    assert.equal(c.state, 'disconnected');
    assert.equal(states.at(-1), 'disconnected');
  });

  test('a dropped connection (no close frame) reconnects with backoff', async () => {
    const c = client();
    await c.connect();
    srv.last.ws.terminate();
    await srv.until(() => srv.conns.length === 2, 3000, 'a second connection');
    await waitFor(() => c.state === 'connected');
  });

  test('close 1001 server_shutdown reconnects at once, whatever the backoff', async () => {
    const c = client({ minReconnectDelay: 60000, maxReconnectDelay: 60000, random: () => 0.99 });
    await c.connect();
    srv.last.ws.close(1001, 'server_shutdown');
    await srv.until(() => srv.conns.length === 2, 2000, 'an immediate reconnect');
  });

  test('close 1009 body_too_long reconnects', async () => {
    const c = client();
    await c.connect();
    srv.last.ws.send(frame(3001, { reason: 'body_too_long' }, { err_code: 1009, err_msg: 'body_too_long' }));
    srv.last.ws.close(1009, 'body_too_long');
    await srv.until(() => srv.conns.length === 2, 3000, 'a reconnect');
  });

  test('kicked (2002 then close 1008 "kicked"): stops, reports, does not reconnect', async () => {
    const c = client();
    await c.connect();
    const kicked = new Promise((r) => c.on('kicked', r));
    srv.last.ws.send(frame(2002, { reason: 'kicked', detail: 'a newer connection took over' }, { err_code: 1108, err_msg: 'kicked' }));
    srv.last.ws.close(1008, 'kicked');
    const k = await kicked;
    assert.equal(k.reason, 'kicked');
    assert.equal(k.detail, 'a newer connection took over');
    await waitFor(() => c.state === 'disconnected');
    // Give a reconnect every chance to happen: a ping round trip on a fresh connection of another client.
    const other = client({ getToken: () => token('bob') });
    await other.connect();
    assert.equal(srv.conns.length, 2, 'the kicked client did not reconnect');
  });

  for (const reason of ['token_expired', 'session_invalid', 'unauthorized']) {
    test(`gate ${reason} (3001 then close 1008): getToken() is asked again and the new token is used`, async () => {
      let n = 0;
      const hints = [];
      const c = client({ getToken: (hint) => { hints.push(hint); return token('alice', `t${n++}`); } });
      await c.connect();
      srv.last.ws.send(frame(3001, { reason, detail: 'x' }, { err_code: 1103, err_msg: reason }));
      srv.last.ws.close(1008, reason);
      await srv.until(() => srv.conns.length === 2, 3000, 'a reconnect');
      assert.equal(srv.last.url.searchParams.get('token'), token('alice', 't1'));
      assert.deepEqual(hints[1], { reason });
      await waitFor(() => c.state === 'connected');
    });
  }

  test('getToken() may hand back the same token when the server takes it again', async () => {
    const c = client();
    await c.connect();
    for (let i = 1; i <= 2; i++) {
      srv.last.ws.send(frame(3001, { reason: 'token_expired' }, { err_code: 1103, err_msg: 'token_expired' }));
      srv.last.ws.close(1008, 'token_expired');
      await srv.until(() => srv.conns.length === i + 1, 3000, `reconnect ${i}`);
      await waitFor(() => c.state === 'connected');
    }
  });

  test('a refused handshake asks HTTP, then getToken() for a fresh token', async () => {
    srv.validTokens = new Set([token('alice', 'fresh')]);
    const hints = [];
    const c = client({ getToken: (hint) => { hints.push(hint); return hint ? token('alice', 'fresh') : token('alice', 'old'); } });
    await c.connect();
    assert.equal(srv.last.url.searchParams.get('token'), token('alice', 'fresh'));
    assert.deepEqual(hints, [undefined, { reason: 'token_expired' }]);
  });

  test('getToken() returning the refused token again ends the session with an error', async () => {
    srv.validTokens = new Set();
    const c = client();
    const errors = [];
    c.on('error', (e) => errors.push(e.reason));
    await assert.rejects(c.connect(), /token_expired/);
    assert.equal(c.state, 'disconnected');
    assert.deepEqual(errors, ['token_expired']);
  });

  test('no pong: the connection counts as dead and is replaced', async () => {
    const c = client({ pingInterval: 30, pongTimeout: 30 });
    srv.on(1001, (f, reply) => reply({ conversations: {}, next_cursor: '' }));
    await c.connect();
    // The fake answers pings; make this one silent.
    const first = srv.last;
    first.ws.removeAllListeners('message');
    await srv.until(() => srv.conns.length >= 2, 3000, 'a replacement connection');
  });

  test('requests fail with disconnected when the connection drops', async () => {
    const c = client();
    srv.on(1006, () => {});
    await c.connect();
    const p = c.request(1006, { conversation_id: 'x' });
    await srv.until(() => srv.frames(1006).length === 1);
    srv.last.ws.terminate();
    await assert.rejects(p, (e) => e.reason === 'disconnected');
  });
});

describe('sending', () => {
  test('pending → accepted → saved; promises resolve with seq, serverMsgId, conversationId', async () => {
    acceptSends();
    const c = client();
    await c.connect();
    const out = c.send({ recvId: 'bob', msgType: 101, content: { text: 'hi' } });
    const states = [];
    out.on('state', (s) => states.push(s));
    assert.equal(out.state, 'pending');
    assert.match(out.clientMsgId, /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    const acc = await out.accepted;
    assert.deepEqual(acc, { seq: 1, serverMsgId: 's-1', conversationId: 'si_alice_bob' });
    assert.equal(out.sendAt, 1);
    const body = srv.frames(1003)[0].data;
    assert.deepEqual(body, { client_msg_id: out.clientMsgId, session_type: 1, msg_type: 101, content: { text: 'hi' }, recv_id: 'bob' });
    srv.last.ws.send(frame(2101, { ack_type: 'saved', client_msg_id: out.clientMsgId, server_msg_id: 's-1', conversation_id: 'si_alice_bob', seq: 1, send_at: 1 }));
    const saved = await out.saved;
    assert.equal(saved.seq, 1);
    assert.deepEqual(states, ['accepted', 'saved']);
    assert.equal(c.pendingMessages().length, 0);
  });

  test('group send and ack_type saved (two-phase off) go straight to saved', async () => {
    acceptSends('sg_g1', 7, 'saved');
    const c = client();
    await c.connect();
    const out = c.send({ groupId: 'g1', msgType: 106, content: { text: '@bob hi' }, atUserIds: ['bob'], clientMsgId: 'mine-1', quote: { seq: 3 } });
    await out.saved;
    assert.equal(out.state, 'saved');
    assert.equal(out.clientMsgId, 'mine-1');
    const body = srv.frames(1003)[0].data;
    assert.equal(body.session_type, 3);
    assert.equal(body.group_id, 'g1');
    assert.deepEqual(body.at_user_ids, ['bob']);
    assert.deepEqual(body.quote, { seq: 3 });
  });

  test('sent while disconnected: goes out, in order, once connected', async () => {
    acceptSends();
    const c = client();
    const a = c.send({ recvId: 'bob', msgType: 101, content: { text: '1' } });
    const b = c.send({ recvId: 'bob', msgType: 101, content: { text: '2' } });
    await c.connect();
    await Promise.all([a.accepted, b.accepted]);
    assert.deepEqual(srv.frames(1003).map((f) => f.data.content.text), ['1', '2']);
    assert.deepEqual([a.seq, b.seq], [1, 2]);
  });

  test('a send whose answer the drop swallowed is resent with the same clientMsgId', async () => {
    const seen = [];
    srv.on(1003, (f, reply, conn) => {
      seen.push(f.data.client_msg_id);
      if (seen.length === 1) { conn.ws.terminate(); return; }
      reply({ ack_type: 'saved', client_msg_id: f.data.client_msg_id, conversation_id: 'si_alice_bob', seq: 1, server_msg_id: 's-1' });
    });
    const c = client();
    await c.connect();
    const out = c.send({ recvId: 'bob', msgType: 101, content: { text: 'x' } });
    await out.saved;
    assert.deepEqual(seen, [out.clientMsgId, out.clientMsgId]);
  });

  test('accepted but not saved when the connection drops: resent after the reconnect until saved', async () => {
    let n = 0;
    srv.on(1003, (f, reply) => {
      n++;
      reply({ ack_type: n === 1 ? 'accepted' : 'saved', client_msg_id: f.data.client_msg_id, conversation_id: 'si_alice_bob', seq: 4, server_msg_id: 's-4' });
    });
    const c = client();
    await c.connect();
    const out = c.send({ recvId: 'bob', msgType: 101, content: { text: 'x' } });
    await out.accepted;
    assert.equal(out.state, 'accepted');
    srv.last.ws.terminate();
    await out.saved;
    assert.equal(n, 2);
    assert.equal(srv.frames(1003)[1].data.client_msg_id, out.clientMsgId);
  });

  test('a non-retryable refusal fails the message; both promises reject', async () => {
    srv.on(1003, (f, reply) => reply({ detail: 'not a member', client_msg_id: f.data.client_msg_id }, 'not_group_member'));
    const c = client();
    await c.connect();
    const out = c.send({ groupId: 'g1', msgType: 101, content: { text: 'x' } });
    await assert.rejects(out.accepted, (e) => e.reason === 'not_group_member');
    await assert.rejects(out.saved, (e) => e.reason === 'not_group_member');
    assert.equal(out.state, 'failed');
    assert.equal(out.error.reason, 'not_group_member');
  });

  test('too_many_requests: waits retry_after_ms and sends the same message again, order kept', async () => {
    let refused = false;
    const order = [];
    srv.on(1003, (f, reply) => {
      if (!refused && f.data.content.text === '2') {
        refused = true;
        reply({ retry_after_ms: 20, client_msg_id: f.data.client_msg_id }, 'too_many_requests');
        return;
      }
      order.push(f.data.content.text);
      reply({ ack_type: 'saved', client_msg_id: f.data.client_msg_id, conversation_id: 'si_alice_bob', seq: order.length, server_msg_id: 'x' });
    });
    const c = client();
    await c.connect();
    const outs = ['1', '2', '3'].map((t) => c.send({ recvId: 'bob', msgType: 101, content: { text: t } }));
    await Promise.all(outs.map((o) => o.saved));
    assert.deepEqual(order, ['1', '2', '3']);
  });

  test('save_failed (3001) fails the message', async () => {
    acceptSends();
    const c = client();
    await c.connect();
    const out = c.send({ recvId: 'bob', msgType: 101, content: { text: 'x' } });
    await out.accepted;
    srv.last.ws.send(frame(3001, { reason: 'save_failed', client_msg_id: out.clientMsgId, conversation_id: 'si_alice_bob', seq: 1 }, { err_code: 1500, err_msg: 'save_failed' }));
    await assert.rejects(out.saved, (e) => e.reason === 'save_failed');
    assert.equal(out.state, 'failed');
  });

  test('outbox: a new client on the same outbox resends what the old one left unsaved, same clientMsgId', async () => {
    const outbox = new MemoryOutbox();
    srv.on(1003, () => {}); // never answers
    const c1 = client({ outbox });
    await c1.connect();
    const out = c1.send({ recvId: 'bob', msgType: 101, content: { text: 'survives' } });
    await srv.until(() => srv.frames(1003).length === 1);
    c1.disconnect();
    await waitFor(() => outbox.list().length === 1, 2000, 'the outbox record');
    assert.equal(outbox.list()[0].clientMsgId, out.clientMsgId);
    acceptSends('si_alice_bob', 1, 'saved');
    const c2 = client({ outbox });
    await c2.connect();
    await waitFor(() => c2.pendingMessages().length === 0 && srv.frames(1003).length === 2, 3000, 'the resend');
    assert.equal(srv.frames(1003)[1].data.client_msg_id, out.clientMsgId);
    await waitFor(() => outbox.list().length === 0, 2000, 'the record deleted once saved');
  });

  test('outbox: a burst of sends is written in few apply calls, in send order', async () => {
    /** @type {any[][]} */
    const calls = [];
    const mem = new MemoryOutbox();
    const outbox = {
      list: () => mem.list(),
      put: (r) => mem.put(r),
      delete: (id) => mem.delete(id),
      apply: async (ops) => {
        calls.push(ops.map((o) => (o.put ? 'put ' + o.put.body.content.text : 'delete')));
        for (const o of ops) (o.put ? mem.put(o.put) : mem.delete(o.delete));
      },
    };
    srv.on(1003, () => {}); // never answers: every record stays
    const c = client({ outbox });
    await c.connect();
    for (let i = 0; i < 50; i++) c.send({ recvId: 'bob', msgType: 101, content: { text: 'b' + i } });
    await waitFor(() => mem.list().length === 50, 2000, 'all 50 in the outbox');
    assert.ok(calls.length <= 2, `${calls.length} apply calls for one burst`);
    assert.deepEqual(calls.flat(), Array.from({ length: 50 }, (_, i) => 'put b' + i));
    c.disconnect();
  });

  test('outbox records of another user are not sent', async () => {
    const outbox = new MemoryOutbox();
    outbox.put({ clientMsgId: 'other', owner: 'mallory', body: { client_msg_id: 'other', session_type: 1, recv_id: 'x', msg_type: 101, content: { text: 'x' } }, state: 'pending', createdAt: 1, order: 0 });
    acceptSends();
    const c = client({ outbox });
    await c.connect();
    const out = c.send({ recvId: 'bob', msgType: 101, content: { text: 'mine' } });
    await out.accepted;
    assert.deepEqual(srv.frames(1003).map((f) => f.data.client_msg_id), [out.clientMsgId]);
  });
});

describe('message stream', () => {
  /** serve answers 1005 pulls from a seq → message map (placeholders where null). */
  function serve(store, maxSeq, pending = []) {
    srv.on(1005, (f, reply) => {
      const limit = f.data.limit || 100;
      const top = f.data.end_seq || maxSeq;
      const from = f.data.begin_seq || Math.max(1, top - limit + 1);
      const messages = [];
      for (let s = from; s <= top && messages.length < limit; s++) {
        if (pending.includes(s)) break;
        messages.push(store.has(s) ? store.get(s) : { seq: s, status: 'unavailable' });
      }
      reply({ messages, min_seq: 1, max_seq: maxSeq, pending_seqs: pending.filter((s) => s >= from) });
    });
  }

  test('a gap is filled by pull, unavailable seqs become placeholders, order is by seq', async () => {
    const store = new Map([[1, msg(1)], [3, msg(3)], [4, msg(4)]]);
    serve(store, 4);
    const c = client();
    const got = [];
    c.on('message', (m) => got.push(`${m.seq}:${m.status}`));
    await c.connect();
    srv.last.ws.send(frame(2001, msg(4)));
    await waitFor(() => got.length === 4, 3000, 'four messages');
    assert.deepEqual(got, ['1:normal', '2:unavailable', '3:normal', '4:normal']);
  });

  test('pushes already emitted are dropped, also after a reconnect and from the resend', async () => {
    serve(new Map([[1, msg(1)], [2, msg(2)]]), 2);
    const c = client();
    const got = [];
    c.on('message', (m) => got.push(m.seq));
    await c.connect();
    srv.last.ws.send(frame(2001, msg(1)));
    srv.last.ws.send(frame(2001, msg(2)));
    srv.last.ws.send(frame(2001, msg(1)));
    await waitFor(() => got.length === 2);
    srv.last.ws.terminate();
    await srv.until(() => srv.conns.length === 2 && srv.last.ws.readyState === 1);
    await waitFor(() => c.state === 'connected');
    srv.last.ws.send(frame(2001, msg(2)));
    srv.last.ws.send(frame(2001, msg(3)));
    await waitFor(() => got.length === 3);
    assert.deepEqual(got, [1, 2, 3]);
  });

  test('the first sync anchors at the delivered cursor; seqs in flight are waited for, not skipped', async () => {
    srv.on(1001, (f, reply) => reply({ conversations: { si_alice_bob: { max_seq: 5, min_seq: 1, read_seq: 2, delivered_seq: 3 } }, next_cursor: '' }));
    const store = new Map([[4, msg(4)], [5, msg(5)]]);
    let pending = [4];
    srv.on(1005, (f, reply) => {
      const messages = [];
      for (let s = f.data.begin_seq; s <= 5; s++) {
        if (pending.includes(s)) break;
        messages.push(store.get(s));
      }
      reply({ messages, min_seq: 1, max_seq: 5, pending_seqs: pending.filter((s) => s >= f.data.begin_seq) });
    });
    const c = client();
    const got = [];
    c.on('message', (m) => got.push(m.seq));
    await c.connect();
    await srv.until(() => srv.frames(1005).length >= 1);
    assert.deepEqual(got, []);
    pending = [];
    await waitFor(() => got.length === 2, 3000, 'seqs 4 and 5 after the retry');
    assert.deepEqual(got, [4, 5]);
    assert.equal(srv.frames(1005)[0].data.begin_seq, 4);
  });

  test('delivered ACKs carry the contiguous prefix only', async () => {
    serve(new Map([[1, msg(1)], [2, msg(2)], [3, msg(3)]]), 3, [2]);
    const c = client();
    const got = [];
    c.on('message', (m) => got.push(m.seq));
    await c.connect();
    srv.last.ws.send(frame(2001, msg(1)));
    srv.last.ws.send(frame(2001, msg(3)));
    await srv.until(() => srv.frames(1101).length === 1, 3000, 'an ACK');
    assert.deepEqual(srv.frames(1101)[0].data, { ack_type: 'delivered', conversation_id: 'si_alice_bob', seq: 1 });
    assert.deepEqual(got, [1]);
  });

  test('own messages (sent by this client) are not emitted but fill their seq', async () => {
    acceptSends('si_alice_bob', 2);
    serve(new Map([[1, msg(1)], [3, msg(3)]]), 3);
    const c = client();
    const got = [];
    c.on('message', (m) => got.push(m.seq));
    await c.connect();
    srv.last.ws.send(frame(2001, msg(1)));
    const out = c.send({ recvId: 'bob', msgType: 101, content: { text: 'mine' } });
    await out.accepted;
    srv.last.ws.send(frame(2001, msg(3)));
    await waitFor(() => got.length === 2);
    assert.deepEqual(got, [1, 3]);
  });

  for (const how of ['unknown_request', 'no answer']) {
    test(`without newest seqs (1001 ${how}) messages flow from the first seq seen`, async () => {
      srv.on(1001, (f, reply) => { if (how === 'unknown_request') reply(null, 'unknown_request'); });
      serve(new Map([[11, msg(11)]]), 11);
      const c = client({ syncTimeout: 100 });
      const got = [];
      c.on('message', (m) => got.push(m.seq));
      await c.connect();
      srv.last.ws.send(frame(2001, msg(10)));
      srv.last.ws.send(frame(2001, msg(12)));
      await waitFor(() => got.length === 3, 3000, 'three messages');
      assert.deepEqual(got, [10, 11, 12]);
    });
  }

  test('receipt, typing, recall, group events', async () => {
    serve(new Map(), 0);
    const c = client();
    const ev = { receipt: [], typing: [], recall: [], group: [] };
    for (const k of Object.keys(ev)) c.on(k, (x) => ev[k].push(x));
    await c.connect();
    const ws = srv.last.ws;
    ws.send(frame(2101, { ack_type: 'read', conversation_id: 'si_alice_bob', seq: 9, user_id: 'bob' }));
    ws.send(frame(2103, { conversation_id: 'si_alice_bob', user_id: 'bob', typing: true }));
    ws.send(frame(2001, msg(1, 'si_alice_bob', { msg_type: 1600, client_msg_id: 'sys:revoke:x', content: { custom: { conversation_id: 'si_alice_bob', seq: 7, server_msg_id: 's-7', sender_id: 'bob', revoker_id: 'bob', revoked_at: 5 } } })));
    ws.send(frame(2001, msg(1, 'sg_g1', { msg_type: 1501, session_type: 3, content: { custom: {} } })));
    await waitFor(() => ev.group.length === 1 && ev.recall.length === 1 && ev.typing.length === 1 && ev.receipt.length === 1);
    assert.deepEqual(ev.receipt[0], { conversationId: 'si_alice_bob', userId: 'bob', ackType: 'read', seq: 9 });
    assert.deepEqual(ev.typing[0], { conversationId: 'si_alice_bob', userId: 'bob', typing: true });
    assert.equal(ev.recall[0].seq, 7);
    assert.equal(ev.recall[0].revokerId, 'bob');
    assert.equal(ev.group[0].msg_type, 1501);
  });

  test('history: the page below the stream start, then earlier pages; history and stream never overlap', async () => {
    srv.on(1001, (f, reply) => reply({ conversations: { si_alice_bob: { max_seq: 130, min_seq: 1, read_seq: 120, delivered_seq: 125 } }, next_cursor: '' }));
    const store = new Map();
    for (let s = 1; s <= 130; s++) store.set(s, msg(s));
    srv.on(1005, (f, reply) => {
      const d = f.data;
      const limit = d.limit || 100;
      const messages = [];
      if (d.end_seq) for (let s = Math.max(1, d.end_seq - limit + 1); s <= d.end_seq; s++) messages.push(store.get(s));
      else for (let s = d.begin_seq; s <= 130 && messages.length < limit; s++) messages.push(store.get(s));
      reply({ messages, min_seq: 1, max_seq: 130, pending_seqs: [] });
    });
    const c = client();
    const got = [];
    c.on('message', (m) => got.push(m.seq));
    const connected = c.connect();
    const first = await c.history('si_alice_bob', { limit: 50 });
    await connected;
    assert.equal(first.end, 125);
    assert.deepEqual([first.messages[0].seq, first.messages.at(-1).seq, first.messages.length, first.hasMore], [76, 125, 50, true]);
    await waitFor(() => got.length === 5, 3000, 'the stream above the cursor');
    assert.deepEqual(got, [126, 127, 128, 129, 130]);
    const earlier = await c.history('si_alice_bob', { before: 76, limit: 100 });
    assert.deepEqual([earlier.messages[0].seq, earlier.messages.at(-1).seq, earlier.hasMore], [1, 75, false]);
    assert.deepEqual(await c.history('si_alice_bob', { before: 1 }), { messages: [], end: 0, hasMore: false, minSeq: 0, maxSeq: 0 });
  });

  test('history of a conversation the stream has not started: the newest page, the stream continues above it', async () => {
    serve(new Map([[1, msg(1)], [2, msg(2)], [3, msg(3)]]), 3);
    srv.on(1001, (f, reply) => reply(null, 'unknown_request'));
    const c = client({ syncTimeout: 100 });
    const got = [];
    c.on('message', (m) => got.push(m.seq));
    await c.connect();
    srv.on(1005, (f, reply) => reply({ messages: [msg(1), msg(2), msg(3)], min_seq: 1, max_seq: 3, pending_seqs: [] }));
    const page = await c.history('si_alice_bob');
    assert.deepEqual([page.end, page.messages.map((m) => m.seq), page.hasMore], [3, [1, 2, 3], false]);
    srv.last.ws.send(frame(2001, msg(4)));
    await waitFor(() => got.length === 1);
    assert.deepEqual(got, [4]);
  });

  test('history of a conversation new since the sync: the newest page, not an empty one', async () => {
    serve(new Map([[1, msg(1, 'sg_g1', { msg_type: 1501, session_type: 3, sender_id: 'alice' })]]), 1);
    const c = client();
    const got = [];
    c.on('message', (m) => got.push(m.seq));
    await c.connect();
    await srv.until(() => srv.frames(1001).length === 1);
    await waitFor(() => c._synced);
    const page = await c.history('sg_g1');
    assert.deepEqual([page.end, page.messages.map((m) => m.seq), page.hasMore], [1, [1], false]);
    assert.deepEqual(got, []);
  });

  test('an error push that answers no request is an error event', async () => {
    serve(new Map(), 0);
    const c = client();
    const errs = [];
    c.on('error', (e) => errs.push(e));
    await c.connect();
    srv.last.ws.send(frame(3001, { reason: 'internal_error', detail: 'x' }, { err_code: 1001, err_msg: 'internal_error' }));
    await waitFor(() => errs.length === 1);
    assert.deepEqual([errs[0].reason, errs[0].detail, c.state], ['internal_error', 'x', 'connected']);
  });
});

describe('message actions and media', () => {
  test('edit, edits, deleteMessages, react, readBy, report go out as 1106–1113 with the routes\' bodies', async () => {
    for (const id of [1106, 1107, 1108, 1109, 1110, 1113]) srv.on(id, (f, reply) => reply({ echo: f.data }));
    const c = client();
    await c.connect();
    assert.deepEqual((await c.edit('si_alice_bob', 3, { text: 'fixed' })).echo, { conversation_id: 'si_alice_bob', seq: 3, content: { text: 'fixed' } });
    assert.deepEqual((await c.edits('si_alice_bob', 3)).echo, { conversation_id: 'si_alice_bob', seq: 3 });
    assert.deepEqual((await c.deleteMessages('si_alice_bob', [3, 4], 'everyone')).echo, { conversation_id: 'si_alice_bob', seqs: [3, 4], scope: 'everyone' });
    assert.deepEqual((await c.deleteMessages('si_alice_bob', [5])).echo.scope, 'self');
    assert.deepEqual((await c.react('si_alice_bob', 3, '👍')).echo, { conversation_id: 'si_alice_bob', seq: 3, emoji: '👍', op: 'add' });
    assert.deepEqual((await c.react('si_alice_bob', 3, '👍', 'remove')).echo.op, 'remove');
    assert.deepEqual((await c.readBy('sg_g1', 7, { limit: 10 })).echo, { conversation_id: 'sg_g1', seq: 7, limit: 10 });
    assert.deepEqual((await c.report('sg_g1', 7, 'spam')).echo, { conversation_id: 'sg_g1', seq: 7, reason: 'spam' });
    srv.on(1106, (f, reply) => reply(null, 'edit_window_passed'));
    await assert.rejects(c.edit('si_alice_bob', 3, { text: 'late' }), (e) => e.reason === 'edit_window_passed');
  });

  test('quote goes out in the send', async () => {
    acceptSends();
    const c = client();
    await c.connect();
    await c.send({ recvId: 'bob', msgType: 101, content: { text: 're' }, quote: { seq: 2 } }).accepted;
    assert.deepEqual(srv.frames(1003)[0].data.quote, { seq: 2 });
  });

  test('edit, reaction, delete and readCounts events, after their messages', async () => {
    srv.on(1005, (f, reply) => reply({ messages: [], min_seq: 1, max_seq: 0, pending_seqs: [] }));
    const c = client();
    const ev = { edit: [], reaction: [], delete: [], readCounts: [], message: [] };
    for (const k of Object.keys(ev)) c.on(k, (x) => ev[k].push(x));
    await c.connect();
    const ws = srv.last.ws;
    const note = (seq, type, custom, conv = 'si_alice_bob') => frame(2001, msg(seq, conv, { msg_type: type, client_msg_id: `sys:${seq}`, content: { custom } }));
    ws.send(note(1, 1601, { conversation_id: 'si_alice_bob', seq: 9, editor_id: 'bob', edit_version: 2, edited_at: 5, content: { text: 'v2' } }));
    ws.send(note(2, 1602, { conversation_id: 'si_alice_bob', seq: 9, user_id: 'bob', emoji: '🎉', op: 'add', count: 3 }));
    ws.send(note(3, 1603, { conversation_id: 'si_alice_bob', seqs: [8, 9], scope: 'everyone', deleter_id: 'bob', deleted_at: 6 }));
    ws.send(note(1, 1604, { conversation_id: 'si_alice_bob', seqs: [7], scope: 'self', deleter_id: 'alice', deleted_at: 7 }, 'si_alice_alice'));
    ws.send(frame(2104, { conversation_id: 'sg_g1', counts: [{ seq: 4, read_count: 2, member_count: 5 }] }));
    await waitFor(() => ev.delete.length === 2 && ev.readCounts.length === 1 && ev.reaction.length === 1 && ev.edit.length === 1);
    const { notification: n1, ...e1 } = ev.edit[0];
    assert.deepEqual(e1, { conversationId: 'si_alice_bob', seq: 9, editorId: 'bob', editVersion: 2, editedAt: 5, content: { text: 'v2' } });
    assert.equal(n1.seq, 1);
    const { notification: n2, ...r } = ev.reaction[0];
    assert.deepEqual(r, { conversationId: 'si_alice_bob', seq: 9, userId: 'bob', emoji: '🎉', op: 'add', count: 3 });
    assert.deepEqual(ev.delete.map(({ notification, ...d }) => d), [
      { conversationId: 'si_alice_bob', seqs: [8, 9], scope: 'everyone', deleterId: 'bob', deletedAt: 6 },
      { conversationId: 'si_alice_bob', seqs: [7], scope: 'self', deleterId: 'alice', deletedAt: 7 },
    ]);
    assert.deepEqual(ev.readCounts[0], { conversationId: 'sg_g1', counts: [{ seq: 4, read_count: 2, member_count: 5 }] });
    assert.equal(ev.message.length, 4);
  });

  test('upload: multipart POST /object/upload with the token, progress at the end without XMLHttpRequest', async () => {
    const seen = [];
    const fetch = async (url, init) => {
      seen.push({ url, auth: init.headers.Authorization, file: init.body.get('file'), purpose: init.body.get('purpose'), ct: init.headers['Content-Type'] });
      return new Response(JSON.stringify({ err_code: 0, err_msg: '', data: { object_id: 'o1', size: 5 } }));
    };
    const c = client({ fetch });
    const progress = [];
    const obj = await c.upload(new Blob(['hello'], { type: 'text/plain' }), { name: 'a.txt', purpose: 'message', onProgress: (a, b) => progress.push([a, b]) });
    assert.deepEqual(obj, { object_id: 'o1', size: 5 });
    assert.equal(seen[0].url, `${srv.url}/object/upload`);
    assert.equal(seen[0].auth, `Bearer ${token('alice')}`);
    assert.equal(seen[0].ct, undefined); // fetch sets the multipart boundary
    assert.equal(seen[0].file.name, 'a.txt');
    assert.equal(await seen[0].file.text(), 'hello');
    assert.equal(seen[0].purpose, 'message');
    assert.deepEqual(progress, [[5, 5]]);
    const refuse = async () => new Response(JSON.stringify({ err_code: 1, err_msg: 'object_type_refused', data: { reason: 'object_type_refused' } }), { status: 415 });
    await assert.rejects(client({ fetch: refuse }).upload(new Blob(['<svg/>'])), (e) => e.reason === 'object_type_refused' && e.status === 415);
  });
});
