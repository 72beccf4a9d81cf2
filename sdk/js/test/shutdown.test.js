// A real server shutting down: close 1001 server_shutdown, the client
// reconnects at once (whatever its backoff) and, behind a load balancer,
// lands on another instance, whose refusal of the old token makes it ask
// getToken() for one.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import WebSocket from 'ws';

import { NexoClient } from '../src/index.js';
import { waitFor } from './helpers/fakeserver.js';
import { CutProxy, startNexo } from './helpers/nexo.js';

const servers = [];
after(async () => { for (const s of servers) await s.stop().catch(() => {}); });

test('server_shutdown: reconnect at once, to the other instance, with a fresh token', { timeout: 120000 }, async () => {
  // Each is stopped by after() even if the other fails to start: a server
  // left running keeps this file's process alive.
  const a = await startNexo();
  servers.push(a);
  const b = await startNexo();
  servers.push(b);
  const id = `shut${Date.now().toString(36)}`;
  await a.register(id);
  await b.register(id);
  // The load balancer: one address in front of the instances.
  const lb = await new CutProxy(a.port).start();
  let target = a;
  const hints = [];
  let tok = '';
  const c = new NexoClient({
    url: lb.url, platformId: 5, WebSocket, minReconnectDelay: 20000, maxReconnectDelay: 20000, random: () => 0.99,
    // As an app does: the stored token, a new login only when it was refused.
    getToken: async (hint) => {
      hints.push(hint ? hint.reason : '');
      if (!tok || hint) tok = await target.login(id, 5);
      return tok;
    },
  });
  try {
    await c.connect();
    const closes = [];
    c.on('state', (s) => closes.push(s));
    lb.targetPort = b.port;
    target = b;
    const began = Date.now();
    await a.stop();
    await waitFor(() => closes.includes('connecting') && c.state === 'connected', 15000, 'connected to the other instance');
    assert.ok(Date.now() - began < 15000, 'no backoff wait (it would be ~20 s)');
    // The other instance refused the first instance's token; getToken was asked for a fresh one.
    assert.ok(hints.some((h) => h !== ''), `getToken hints ${JSON.stringify(hints)}`);
    const peer = `shutp${Date.now().toString(36)}`;
    await b.register(peer);
    const out = c.send({ recvId: peer, msgType: 101, content: { text: 'on b' } });
    await out.saved;
  } finally {
    c.disconnect();
    await lb.stop();
  }
});
