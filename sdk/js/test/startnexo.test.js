// The test helper's own promise: a server whose port was taken between
// freePort and its bind is started again on another port.

import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';

import { freePort, startNexo } from './helpers/nexo.js';

test('startNexo tries another port when its first is taken', { timeout: 120000 }, async () => {
  const held = net.createServer((s) => s.destroy());
  await new Promise((r) => held.listen(0, '127.0.0.1', () => r(undefined)));
  const taken = /** @type {net.AddressInfo} */ (held.address()).port;
  const tried = [];
  const pick = async () => {
    const port = tried.length === 0 ? taken : await freePort();
    tried.push(port);
    return port;
  };
  try {
    const nexo = await startNexo({}, pick);
    try {
      assert.equal(tried.length, 2, `ports tried: ${tried}`);
      assert.notEqual(nexo.port, taken);
      const res = await fetch(`${nexo.url}/healthz`);
      assert.equal(res.status, 200);
    } finally {
      await nexo.stop();
    }
  } finally {
    held.close();
  }
});
