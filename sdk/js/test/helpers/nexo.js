// Builds the nexo binary (go build ./cmd/nexo, cached by Go) and starts it
// in the embedded mode (SQLite + in-process Redis) on a free port with a
// temporary data directory, for the integration tests. NEXO_BIN names a
// prebuilt binary instead.

import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '../../../..');
const binDir = path.resolve(here, '../../.nexo-test');

/** buildNexo returns the path of a current nexo binary. */
export function buildNexo() {
  if (process.env.NEXO_BIN) return process.env.NEXO_BIN;
  fs.mkdirSync(binDir, { recursive: true });
  const bin = path.join(binDir, 'nexo');
  execFileSync('go', ['build', '-o', bin, './cmd/nexo'], { cwd: repoRoot, stdio: ['ignore', 'inherit', 'inherit'] });
  return bin;
}

/** freePort asks the kernel for an unused TCP port. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {net.AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

export const PASSWORD = 'Nexo-sdk-test-pass-7319!';

/**
 * startNexo starts `nexo serve` in the embedded mode and resolves once
 * /healthz answers: {url, stop(), register(userId), login(userId)}.
 * extraEnv sets more NEXO_ keys; pickPort gives the port to try (freePort).
 */
export async function startNexo(extraEnv = {}, pickPort = freePort) {
  // freePort's port is free when asked, not when nexo binds it: another
  // process's outgoing connection may take it in between (it lies in the
  // kernel's ephemeral range), so a start that lost its port tries another.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNexoOn(await pickPort(), extraEnv);
    } catch (err) {
      if (!(err instanceof PortTakenError) || attempt >= 3) throw err;
    }
  }
}

/** PortTakenError: nexo exited at start because its port was taken. */
class PortTakenError extends Error {}

async function startNexoOn(port, extraEnv) {
  const bin = buildNexo();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nexo-sdk-'));
  const env = {};
  // Only what this server should see: no stray NEXO_ DSN turns the embedded mode off.
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('NEXO_')) env[k] = v;
  Object.assign(env, { NEXO_HTTP_ADDR: `127.0.0.1:${port}`, NEXO_SQLITE_PATH: path.join(dir, 'nexo.db'), ...extraEnv });
  const logPath = path.join(dir, 'nexo.log');
  const log = fs.openSync(logPath, 'w');
  const proc = spawn(bin, ['serve'], { cwd: dir, env, stdio: ['ignore', log, log] });
  let exited = false;
  const gone = new Promise((r) => proc.once('exit', () => { exited = true; r(); }));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (exited) {
      const text = fs.readFileSync(logPath, 'utf8');
      fs.closeSync(log);
      fs.rmSync(dir, { recursive: true, force: true });
      const Err = text.includes('address already in use') ? PortTakenError : Error;
      throw new Err(`nexo exited at start; log:\n${text}`);
    }
    try {
      // Bounded: a port taken by a listener that never answers must not
      // hang the start past nexo's exit.
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL'); // a server left running keeps the test file's process alive
      throw new Error(`nexo did not answer /healthz within 60 s; log:\n${fs.readFileSync(logPath, 'utf8')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  async function call(method, p, body, tok) {
    const headers = { 'Content-Type': 'application/json' };
    if (tok) headers.Authorization = `Bearer ${tok}`;
    const res = await fetch(url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const env2 = await res.json();
    if (env2.err_code !== 0) throw new Error(`${method} ${p}: ${JSON.stringify(env2)}`);
    return env2.data;
  }

  return {
    url,
    port,
    logPath,
    call,
    async register(userId) {
      await call('POST', '/user/register', { user_id: userId, nickname: userId, password: PASSWORD });
    },
    /** login returns a fresh token of userId on platformId (default 5, web). */
    async login(userId, platformId = 5) {
      const d = await call('POST', '/auth/login', { user_id: userId, password: PASSWORD, platform_id: platformId });
      return d.token;
    },
    async stop() {
      if (!exited) proc.kill('SIGTERM');
      await gone;
      fs.closeSync(log);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * CutProxy forwards TCP connections to target; cut() destroys every
 * connection open through it at once (both sides, no close frame), as a
 * lost network would.
 */
export class CutProxy {
  constructor(targetPort) {
    this.targetPort = targetPort;
    /** @type {Set<net.Socket>} */
    this.sockets = new Set();
    this.connections = 0;
    this.server = net.createServer((client) => {
      this.connections++;
      const upstream = net.connect(this.targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => { this.sockets.delete(s); client.destroy(); upstream.destroy(); });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  async start() {
    await new Promise((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = /** @type {net.AddressInfo} */ (this.server.address()).port;
    this.url = `http://127.0.0.1:${this.port}`;
    return this;
  }

  /** cut drops every open connection; returns how many sockets it destroyed. */
  cut() {
    const n = this.sockets.size;
    for (const s of [...this.sockets]) s.destroy();
    return n;
  }

  async stop() {
    this.cut();
    await new Promise((r) => this.server.close(r));
  }
}
