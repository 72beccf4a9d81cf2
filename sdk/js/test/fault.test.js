// The fault test: 1,000 messages from one client to another while a TCP
// proxy between one of them and the real server (embedded mode) cuts the
// connection at 20 random moments. Every message must be saved exactly
// once, received exactly once and in order, and every out.saved resolve.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import WebSocket from 'ws';

import { NexoClient, singleConversationID } from '../src/index.js';
import { waitFor } from './helpers/fakeserver.js';
import { CutProxy, startNexo } from './helpers/nexo.js';

const MESSAGES = 1000;
const CUTS = 20;

let nexo;
before(async () => { nexo = await startNexo(); });
after(async () => { if (nexo) await nexo.stop(); });

async function makeClient(id, url) {
  await nexo.register(id);
  let tok = '';
  const c = new NexoClient({
    url, platformId: 5, WebSocket, minReconnectDelay: 50, maxReconnectDelay: 1000,
    getToken: async (hint) => {
      if (!tok || hint) tok = await nexo.login(id, 5);
      return tok;
    },
  });
  return c;
}

/** randomCutPoints picks CUTS distinct progress counts in [1, MESSAGES - 50]. */
function randomCutPoints() {
  const points = new Set();
  while (points.size < CUTS) points.add(1 + Math.floor(Math.random() * (MESSAGES - 50)));
  return [...points].sort((a, b) => a - b);
}

for (const side of ['sender', 'receiver']) {
  test(`1,000 messages, ${CUTS} random cuts between the ${side} and the server: saved once, received once, in order`, { timeout: 240000 }, async () => {
    const proxy = await new CutProxy(nexo.port).start();
    const tag = `${side.slice(0, 4)}${Date.now().toString(36)}`;
    const aliceID = `fa${tag}`;
    const bobID = `fb${tag}`;
    const alice = await makeClient(aliceID, side === 'sender' ? proxy.url : nexo.url);
    const bob = await makeClient(bobID, side === 'receiver' ? proxy.url : nexo.url);
    try {
      await alice.connect();
      await bob.connect();
      /** @type {number[]} */
      const got = [];
      /** @type {number[]} */
      const seqs = [];
      bob.on('message', (m) => {
        if (m.sender_id !== aliceID) return;
        got.push(Number(m.content.text));
        seqs.push(m.seq);
      });

      // Cuts happen as the stream progresses (the cut side's own progress),
      // a random moment after a random count, only while a connection is open.
      const points = randomCutPoints();
      let cuts = 0;
      let saved = 0;
      const progress = () => (side === 'sender' ? saved : got.length);
      let cutting = false;
      const maybeCut = () => {
        if (cutting || cuts >= CUTS || points[cuts] > progress()) return;
        cutting = true;
        setTimeout(() => {
          cutting = false;
          // Reconnecting (nothing open): the next state change or message tries again.
          if (proxy.sockets.size > 0 && alice.state === 'connected' && bob.state === 'connected') {
            proxy.cut();
            cuts++;
          }
          maybeCut();
        }, Math.floor(Math.random() * 5));
      };
      bob.on('message', maybeCut);
      alice.on('state', maybeCut);
      bob.on('state', maybeCut);

      const outs = [];
      for (let i = 0; i < MESSAGES; i++) {
        const out = alice.send({ recvId: bobID, msgType: 101, content: { text: String(i) } });
        out.saved.then(() => { saved++; maybeCut(); }, () => {});
        outs.push(out);
      }
      const results = await Promise.all(outs.map((o) => o.saved));
      assert.equal(outs.filter((o) => o.state === 'saved').length, MESSAGES, 'every out.saved resolved');
      assert.equal(new Set(results.map((r) => r.seq)).size, MESSAGES, 'distinct seqs');
      await waitFor(() => got.length >= MESSAGES, 60000, `bob receives ${MESSAGES} messages (has ${got.length})`);
      // Whatever more could arrive does so within the ACK and fill delays.
      await waitFor(() => bob.state === 'connected', 10000);
      assert.equal(got.length, MESSAGES, 'received exactly once');
      assert.deepEqual(got, [...Array(MESSAGES).keys()], 'in send order');
      for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i] > seqs[i - 1], `seq ${seqs[i]} after ${seqs[i - 1]}`);
      assert.equal(cuts, CUTS, 'all cuts happened');
      assert.ok(proxy.connections >= CUTS + 1, `reconnected through the proxy (${proxy.connections} connections)`);

      // Saved exactly once: the server holds each client_msg_id once.
      const conv = singleConversationID(aliceID, bobID);
      const held = [];
      for (let from = 1; ;) {
        const page = await bob.pull(conv, { from, limit: 100 });
        held.push(...page.messages);
        if (page.messages.length === 0 || page.messages.at(-1).seq >= page.maxSeq) break;
        from = page.messages.at(-1).seq + 1;
      }
      const normal = held.filter((m) => m.status === 'normal');
      assert.equal(normal.length, MESSAGES, 'the server holds each message once');
      assert.equal(new Set(normal.map((m) => m.client_msg_id)).size, MESSAGES);
      assert.deepEqual(new Set(normal.map((m) => m.client_msg_id)), new Set(outs.map((o) => o.clientMsgId)));
    } finally {
      alice.disconnect();
      bob.disconnect();
      await proxy.stop();
    }
  });
}
