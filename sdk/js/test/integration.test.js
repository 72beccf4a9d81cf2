// Integration tests against the real nexo binary in the embedded mode,
// built and started by the test (test/helpers/nexo.js).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import WebSocket from 'ws';

import { NexoClient, singleConversationID } from '../src/index.js';
import { waitFor } from './helpers/fakeserver.js';
import { startNexo } from './helpers/nexo.js';

let nexo;
/** @type {NexoClient[]} */
const clients = [];
let n = 0;

before(async () => { nexo = await startNexo(); });
after(async () => {
  for (const c of clients) c.disconnect();
  if (nexo) await nexo.stop();
});

/** user registers a fresh user and returns a connected client of it (platform 5 unless given). */
async function user(prefix, opts = {}) {
  const id = `${prefix}${++n}x${Date.now().toString(36)}`;
  await nexo.register(id);
  const platform = opts.platformId || 5;
  // As an app does: the stored token, a new login only when it was refused.
  let tok = '';
  const getToken = async (hint) => {
    if (!tok || hint) tok = await nexo.login(id, platform);
    return tok;
  };
  const c = new NexoClient({ url: nexo.url, platformId: platform, WebSocket, getToken, minReconnectDelay: 20, maxReconnectDelay: 200, ...opts });
  clients.push(c);
  await c.connect();
  return { id, c, token: () => tok };
}

test('single chat: sends saved, received once in order, receipts, typing, recall, pull, conversations', async () => {
  const alice = await user('alice');
  const bob = await user('bob');
  const got = [];
  bob.c.on('message', (m) => got.push(m));
  const outs = [1, 2, 3].map((i) => alice.c.send({ recvId: bob.id, msgType: 101, content: { text: `hello ${i}` } }));
  const saved = await Promise.all(outs.map((o) => o.saved));
  assert.deepEqual(outs.map((o) => o.state), ['saved', 'saved', 'saved']);
  const conv = singleConversationID(alice.id, bob.id);
  assert.deepEqual(saved.map((s) => s.conversationId), [conv, conv, conv]);
  assert.deepEqual(saved.map((s) => s.seq), [1, 2, 3]);
  await waitFor(() => got.length === 3, 10000, 'bob gets three messages');
  assert.deepEqual(got.map((m) => m.content.text), ['hello 1', 'hello 2', 'hello 3']);
  assert.deepEqual(got.map((m) => m.seq), [1, 2, 3]);
  assert.equal(got[0].sender_id, alice.id);

  // Read receipt to the sender.
  const receipts = [];
  alice.c.on('receipt', (r) => receipts.push(r));
  await bob.c.markRead(conv, 3);
  await waitFor(() => receipts.some((r) => r.ackType === 'read' && r.seq === 3 && r.userId === bob.id), 10000, 'the read receipt');

  // Typing.
  const typing = [];
  bob.c.on('typing', (t) => typing.push(t));
  await alice.c.typing(conv, true);
  await waitFor(() => typing.length === 1, 10000, 'the typing push');
  assert.deepEqual(typing[0], { conversationId: conv, userId: alice.id, typing: true });

  // Recall: everyone gets a recall event for seq 2.
  const recalls = [];
  bob.c.on('recall', (r) => recalls.push(r));
  await alice.c.recall(conv, 2);
  await waitFor(() => recalls.length === 1, 10000, 'the recall');
  assert.equal(recalls[0].seq, 2);
  assert.equal(recalls[0].revokerId, alice.id);

  // History by pull: seq 2 now revoked.
  const page = await bob.c.pull(conv, { from: 1, limit: 10 });
  assert.deepEqual(page.messages.slice(0, 3).map((m) => m.status), ['normal', 'revoked', 'normal']);
  assert.ok(page.maxSeq >= 4);

  const list = await bob.c.conversations();
  assert.ok(list.some((x) => x.conversation_id === conv), 'the conversation is listed');
  const presence = await alice.c.presence([bob.id]);
  assert.ok(JSON.stringify(presence).includes(bob.id));
});

test('group: create, group notification event, messages in order to members', async () => {
  const owner = await user('own');
  const member = await user('mem');
  const third = await user('thr');
  const groupEvents = [];
  const got = [];
  member.c.on('group', (m) => groupEvents.push(m));
  member.c.on('message', (m) => got.push(m));
  const g = await owner.c.createGroup({ name: 'sdk test', member_ids: [member.id, third.id] });
  assert.ok(g.group_id);
  const conv = `sg_${g.group_id}`;
  const outs = ['a', 'b'].map((t) => owner.c.send({ groupId: g.group_id, msgType: 101, content: { text: t } }));
  await Promise.all(outs.map((o) => o.saved));
  await waitFor(() => got.filter((m) => m.msg_type === 101).length === 2, 10000, 'two group messages');
  const texts = got.filter((m) => m.conversation_id === conv && m.msg_type === 101).map((m) => m.content.text);
  assert.deepEqual(texts, ['a', 'b']);
  const seqs = got.filter((m) => m.conversation_id === conv).map((m) => m.seq);
  assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y), 'ascending seqs');
  assert.equal(new Set(seqs).size, seqs.length, 'no seq twice');
  assert.ok(groupEvents.length >= 1, 'the creation notification came as a group event');
  const info = await member.c.groupInfo(g.group_id);
  assert.equal(info.group_id, g.group_id);
  const groups = await member.c.groups();
  assert.ok(groups.some((x) => x.group_id === g.group_id));
  const members = await owner.c.groupMembers(g.group_id);
  assert.ok(JSON.stringify(members).includes(member.id));
});

test('a refused send fails for good: unknown receiver', async () => {
  const alice = await user('lone');
  const out = alice.c.send({ recvId: 'nobody-here-at-all', msgType: 101, content: { text: 'x' } });
  await assert.rejects(out.saved, (e) => e.reason === 'user_not_found');
  assert.equal(out.state, 'failed');
});

test('kicked by a newer connection of the same user and platform: stops and reports', async () => {
  const first = await user('kick');
  const kicked = new Promise((r) => first.c.on('kicked', r));
  // The same token in a second tab: its connection takes over (single_per_platform).
  const second = new NexoClient({ url: nexo.url, platformId: 5, WebSocket, getToken: () => first.token() });
  clients.push(second);
  await second.connect();
  const k = await kicked;
  assert.equal(k.reason, 'kicked');
  await waitFor(() => first.c.state === 'disconnected');
  assert.equal(second.state, 'connected');
});

test('messages sent while the receiver was offline arrive once, in order, after it connects', async () => {
  const alice = await user('offa');
  const bob = await user('offb');
  bob.c.disconnect();
  const outs = [];
  for (let i = 0; i < 30; i++) outs.push(alice.c.send({ recvId: bob.id, msgType: 101, content: { text: String(i) } }));
  await Promise.all(outs.map((o) => o.saved));
  const got = [];
  bob.c.on('message', (m) => got.push(Number(m.content.text)));
  await bob.c.connect();
  await waitFor(() => got.length === 30, 15000, 'thirty messages');
  assert.deepEqual(got, [...Array(30).keys()]);
});

test('a refresh revokes the token in use: session_invalid, getToken() gives the new one, the client reconnects and sends', async () => {
  const id = `refr${Date.now().toString(36)}`;
  await nexo.register(id);
  const peer = await user('rpeer');
  let tok = await nexo.login(id, 5);
  const hints = [];
  const c = new NexoClient({
    url: nexo.url, platformId: 5, WebSocket, minReconnectDelay: 20, maxReconnectDelay: 200,
    getToken: (hint) => { hints.push(hint && hint.reason); return tok; },
  });
  clients.push(c);
  await c.connect();
  const states = [];
  c.on('state', (s) => states.push(s));
  // The app refreshes (POST /auth/refresh): the old token is revoked and
  // the server closes the connection that used it.
  const fresh = await nexo.call('POST', '/auth/refresh', undefined, tok);
  tok = fresh.token;
  await waitFor(() => states.includes('connecting') && c.state === 'connected', 10000, 'the reconnect with the new token');
  assert.ok(hints.includes('session_invalid'), `getToken hints ${JSON.stringify(hints)}`);
  assert.equal(c.token, tok);
  const out = c.send({ recvId: peer.id, msgType: 101, content: { text: 'after refresh' } });
  await out.saved;
});

test('message actions on the real server: quote, edit, reaction, read by, delete for everyone and for self, report', async () => {
  const alice = await user('alice');
  const bob = await user('bob');
  const conv = singleConversationID(alice.id, bob.id);
  const ev = { edit: [], reaction: [], delete: [] };
  for (const k of Object.keys(ev)) bob.c.on(k, (x) => ev[k].push(x));
  const first = await alice.c.send({ recvId: bob.id, msgType: 101, content: { text: 'typo hre' } }).saved;
  const reply = await bob.c.send({ recvId: alice.id, msgType: 101, content: { text: 'a reply' }, quote: { seq: first.seq } }).saved;

  const edited = await alice.c.edit(conv, first.seq, { text: 'typo here' });
  assert.equal(edited.edit_version, 1);
  await waitFor(() => ev.edit.length === 1, 10000, 'the edit event');
  assert.deepEqual([ev.edit[0].seq, ev.edit[0].editVersion, ev.edit[0].content.text, ev.edit[0].editorId], [first.seq, 1, 'typo here', alice.id]);
  const versions = await bob.c.edits(conv, first.seq);
  assert.equal(JSON.stringify(versions).includes('typo hre'), true);

  await alice.c.react(conv, reply.seq, '👍');
  await waitFor(() => ev.reaction.length === 1, 10000, 'the reaction event');
  assert.deepEqual([ev.reaction[0].seq, ev.reaction[0].emoji, ev.reaction[0].count, ev.reaction[0].userId], [reply.seq, '👍', 1, alice.id]);

  await alice.c.markRead(conv, reply.seq);
  let rb;
  for (const deadline = Date.now() + 10000; Date.now() < deadline;) {
    rb = await bob.c.readBy(conv, reply.seq);
    if (rb.read_count === 1) break;
    await new Promise((r) => setTimeout(r, 100)); // the cursor writer flushes on its own interval
  }
  assert.deepEqual([rb.read_count, rb.read_user_ids], [1, [alice.id]]);

  // History shows the quote, the edit and the reaction.
  const page = await bob.c.pull(conv, { limit: 10 });
  const byseq = new Map(page.messages.map((m) => [m.seq, m]));
  assert.equal(byseq.get(first.seq).content.text, 'typo here');
  assert.equal(byseq.get(first.seq).edit_version, 1);
  assert.equal(byseq.get(reply.seq).quote.seq, first.seq);
  assert.equal(byseq.get(reply.seq).quote.preview, 'typo hre');
  assert.deepEqual(byseq.get(reply.seq).reactions, [{ emoji: '👍', count: 1, me: false }]);

  await bob.c.deleteMessages(conv, [reply.seq], 'everyone');
  await waitFor(() => ev.delete.length === 1, 10000, 'the delete event');
  assert.deepEqual([ev.delete[0].scope, ev.delete[0].seqs], ['everyone', [reply.seq]]);
  await bob.c.deleteMessages(conv, [first.seq], 'self');
  await waitFor(() => ev.delete.length === 2, 10000, 'the delete-for-self event');
  assert.deepEqual([ev.delete[1].scope, ev.delete[1].seqs, ev.delete[1].notification.conversation_id], ['self', [first.seq], singleConversationID(bob.id, bob.id)]);
  // Bob's stream of conv started at seq 0 (new after his connect): history() is empty, pull() shows the result.
  assert.deepEqual((await bob.c.history(conv)).messages, []);
  const after = await bob.c.pull(conv, { limit: 10 });
  const st = new Map(after.messages.map((m) => [m.seq, m.status]));
  assert.deepEqual([st.get(first.seq), st.get(reply.seq)], ['deleted', 'deleted']);

  const rep = await bob.c.report(conv, first.seq, 'spam');
  assert.equal(typeof rep.report_id, 'string');
  await assert.rejects(bob.c.edit(conv, first.seq, { text: 'not mine' }), (e) => typeof e.reason === 'string' && e.reason !== '');
});

test('history on the real server: a new session shows what was delivered as history and the rest as its stream, once each', async () => {
  const alice = await user('alice');
  const bob = await user('bob');
  const conv = singleConversationID(alice.id, bob.id);
  const got = [];
  bob.c.on('message', (m) => got.push(m.seq));
  for (let i = 1; i <= 5; i++) await alice.c.send({ recvId: bob.id, msgType: 101, content: { text: `m${i}` } }).saved;
  await waitFor(() => got.length === 5, 10000, 'bob gets five');
  // The SDK ACKs delivered up to 5; wait until the server has it.
  for (const deadline = Date.now() + 10000; ;) {
    const s = await bob.c.newestSeqs([conv]);
    if (s[conv] && s[conv].delivered_seq === 5) break;
    if (Date.now() > deadline) assert.fail('delivered_seq never reached 5');
    await new Promise((r) => setTimeout(r, 50));
  }
  bob.c.disconnect();
  for (let i = 6; i <= 8; i++) await alice.c.send({ recvId: bob.id, msgType: 101, content: { text: `m${i}` } }).saved;

  const next = new NexoClient({ url: nexo.url, platformId: 5, WebSocket, getToken: () => bob.token() });
  clients.push(next);
  const streamed = [];
  next.on('message', (m) => streamed.push(m.seq));
  await next.connect();
  const page = await next.history(conv, { limit: 3 });
  assert.deepEqual([page.end, page.messages.map((m) => m.seq), page.hasMore], [5, [3, 4, 5], true]);
  const earlier = await next.history(conv, { before: 3 });
  assert.deepEqual([earlier.messages.map((m) => m.content.text), earlier.hasMore], [['m1', 'm2'], false]);
  await waitFor(() => streamed.length === 3, 10000, 'the stream above the cursor');
  assert.deepEqual(streamed, [6, 7, 8]);
});

test('media on the real server: upload, send by reference, the receiver gets the metadata and a signed URL to the bytes', async () => {
  const alice = await user('alice');
  const bob = await user('bob');
  const got = [];
  bob.c.on('message', (m) => got.push(m));
  const text = 'the minutes of the meeting\n';
  const progress = [];
  const obj = await alice.c.upload(new Blob([text], { type: 'text/plain' }), { name: 'minutes.txt', onProgress: (a, b) => progress.push([a, b]) });
  assert.equal(obj.name, 'minutes.txt');
  assert.equal(obj.size, text.length);
  assert.match(obj.object_id, /^o[0-9a-f]{32}$/);
  assert.deepEqual(progress.at(-1), [text.length, text.length]);
  await alice.c.send({ recvId: bob.id, msgType: 105, content: { file: { object_id: obj.object_id } } }).saved;
  await waitFor(() => got.length === 1, 10000, 'bob gets the file message');
  const ref = got[0].content.file;
  assert.deepEqual([ref.object_id, ref.name, ref.size], [obj.object_id, 'minutes.txt', text.length]);
  let url;
  for (const deadline = Date.now() + 10000; ;) {
    try {
      url = await bob.c.objectUrl(ref.object_id);
      break;
    } catch (e) {
      // Right after the save the receiver may be refused for a moment (docs/media.md).
      if (e.reason !== 'object_access_denied' || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const res = await fetch(url.url);
  assert.equal(await res.text(), text);
  await assert.rejects(alice.c.upload(new Blob(['<svg xmlns="http://www.w3.org/2000/svg"/>'], { type: 'image/svg+xml' }), { name: 'x.svg' }),
    (e) => e.reason === 'object_type_refused');
});
