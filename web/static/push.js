// Browser side of Nexo's Web Push (docs/push.md). A standalone module: the
// client calls enablePush after the user chose to get notifications.
//
//   import { enablePush, disablePush } from '/assets/push.js';
//   const device = await enablePush({ token });   // asks for permission
//
// It registers the service worker /assets/push-sw.js, fetches the server's
// VAPID key (GET /push/vapid_public_key), subscribes, and registers the
// subscription (POST /push/devices, platform_id 5 = Web). It resolves to
// the device ({device_id, ...}) or rejects with an Error whose reason is the
// server's (e.g. push_provider_unavailable) or "permission_denied" /
// "unsupported".

const SW_URL = '/assets/push-sw.js';
// The worker lives under /assets/, so that is its scope; push needs no
// control of the page.
const SW_SCOPE = '/assets/';

function fail(reason, detail) {
  const e = new Error(detail || reason);
  e.reason = reason;
  return e;
}

// base64url → Uint8Array (applicationServerKey).
function keyBytes(b64url) {
  const b64 = b64url.replace(/-/g, '+').replace(/_/g, '/');
  const raw = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

async function call(baseURL, token, method, path, body) {
  const res = await fetch(baseURL + path, {
    method,
    headers: Object.assign({ Authorization: 'Bearer ' + token }, body ? { 'Content-Type': 'application/json' } : {}),
    body: body ? JSON.stringify(body) : undefined,
  });
  const env = await res.json();
  if (env.err_code !== 0) {
    throw fail(env.err_msg, env.data && env.data.detail);
  }
  return env.data;
}

// enablePush subscribes this browser for token's user. options: token (the
// access token), baseURL ('' for the page's origin), platformID (5),
// locale (navigator.language).
export async function enablePush({ token, baseURL = '', platformID = 5, locale = navigator.language } = {}) {
  if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) {
    throw fail('unsupported', 'this browser has no Web Push');
  }
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') {
    throw fail('permission_denied', 'notifications were not allowed');
  }
  const { key } = await call(baseURL, token, 'GET', '/push/vapid_public_key');
  const reg = await activated(await navigator.serviceWorker.register(SW_URL, { scope: SW_SCOPE }));
  let sub = await reg.pushManager.getSubscription();
  if (sub && !sameKey(sub, key)) {
    await sub.unsubscribe(); // the server's key changed: the old one is dead
    sub = null;
  }
  if (!sub) {
    sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(key) });
  }
  const json = sub.toJSON();
  return call(baseURL, token, 'POST', '/push/devices', {
    provider: 'webpush',
    platform_id: platformID,
    locale: (locale || '').slice(0, 35),
    subscription: { endpoint: json.endpoint, keys: { p256dh: json.keys.p256dh, auth: json.keys.auth } },
  });
}

// activated waits for the worker to be active (serviceWorker.ready would
// not do: it waits for a worker controlling the page, and the page is
// outside the worker's scope).
export async function activated(reg) {
  const w = reg.installing || reg.waiting;
  if (!reg.active && w) {
    await new Promise((resolve) => {
      w.addEventListener('statechange', () => {
        if (w.state === 'activated') {
          resolve();
        }
      });
    });
  }
  return reg;
}

function sameKey(sub, key) {
  const k = sub.options && sub.options.applicationServerKey;
  if (!k) {
    return true;
  }
  const a = new Uint8Array(k);
  const b = keyBytes(key);
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

// disablePush forgets this browser's device on the server and unsubscribes.
export async function disablePush({ token, baseURL = '', deviceID } = {}) {
  const reg = await navigator.serviceWorker.getRegistration(SW_SCOPE);
  const sub = reg && (await reg.pushManager.getSubscription());
  if (deviceID) {
    await call(baseURL, token, 'DELETE', '/push/devices/' + encodeURIComponent(deviceID));
  }
  if (sub) {
    await sub.unsubscribe();
  }
}
