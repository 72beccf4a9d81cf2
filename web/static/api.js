// HTTP calls in Nexo's envelope {err_code, err_msg, data}, and the tab's
// session: the token lives in sessionStorage (this tab only, gone when the
// tab closes) and is refreshed before it expires.

import { PLATFORM_WEB } from './ids.js';

/** ApiError is a refused call: reason is the error table's reason string. */
export class ApiError extends Error {
  constructor(status, reason, detail) {
    super(detail ? `${reason}: ${detail}` : reason);
    this.status = status;
    this.reason = reason;
    this.detail = detail || '';
  }
}

/** Reasons that mean the token can no longer be used. */
const TOKEN_LOST = new Set(['token_missing', 'token_invalid', 'token_expired', 'token_revoked']);

/** isAuthLost reports whether err means "sign in again". */
export function isAuthLost(err) {
  return err instanceof ApiError && TOKEN_LOST.has(err.reason);
}

const KEY = 'nexo.session';

/** Session is the signed-in user of this tab: {userID, token, expireAt}. */
export class Session {
  constructor(storage = window.sessionStorage) {
    this.storage = storage;
    this.value = null;
    try {
      const v = JSON.parse(storage.getItem(KEY) || 'null');
      if (v && v.token && v.userID && v.expireAt > Date.now()) this.value = v;
    } catch {
      this.value = null;
    }
  }

  get userID() { return this.value ? this.value.userID : ''; }
  get token() { return this.value ? this.value.token : ''; }
  get expireAt() { return this.value ? this.value.expireAt : 0; }

  /** save keeps a token answer ({token, expire_at}) for userID. */
  save(userID, tok) {
    this.value = { userID, token: tok.token, expireAt: tok.expire_at };
    this.storage.setItem(KEY, JSON.stringify(this.value));
  }

  clear() {
    this.value = null;
    this.storage.removeItem(KEY);
  }
}

/**
 * Api calls the HTTP API with the session's token. onAuthLost(err) runs
 * when an authenticated call is refused because the token is gone
 * (logged out elsewhere, replaced, expired); onToken() after a refresh
 * replaced it.
 */
export class Api {
  constructor(session, { onAuthLost = () => {}, onToken = () => {} } = {}) {
    this.session = session;
    this.onAuthLost = onAuthLost;
    this.onToken = onToken;
    this.refreshTimer = 0;
    this.refreshing = null;
  }

  /** call sends one request and returns data, or throws ApiError. */
  async call(method, path, body, { auth = true, retried = false } = {}) {
    const token = this.session.token;
    const headers = {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (auth) headers.Authorization = `Bearer ${token}`;
    let res;
    try {
      res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    } catch (e) {
      throw new ApiError(0, 'network_error', 'the server could not be reached');
    }
    let env = null;
    try {
      env = await res.json();
    } catch {
      throw new ApiError(res.status, `http_${res.status}`, res.statusText);
    }
    if (env && env.err_code === 0) return env.data || {};
    const data = (env && env.data) || {};
    const err = new ApiError(res.status, data.reason || (env && env.err_msg) || `http_${res.status}`, data.detail);
    if (auth && isAuthLost(err)) {
      // A refresh that landed while this call was in flight revoked the
      // token it carried: try once more with the new one.
      if (!retried && this.session.token && this.session.token !== token) {
        return this.call(method, path, body, { auth, retried: true });
      }
      this.onAuthLost(err);
    }
    throw err;
  }

  get(path) { return this.call('GET', path); }
  post(path, body) { return this.call('POST', path, body); }

  /** register creates an account; userID may be '' for a generated one. */
  async register(userID, nickname, password) {
    const body = { nickname, password };
    if (userID) body.user_id = userID;
    return this.call('POST', '/user/register', body, { auth: false });
  }

  /** login signs in on the web platform and keeps the token for the tab. */
  async login(userID, password) {
    const tok = await this.call('POST', '/auth/login', { user_id: userID, password, platform_id: PLATFORM_WEB }, { auth: false });
    this.session.save(userID, tok);
    this.scheduleRefresh();
    return tok;
  }

  /** logout revokes the token (best effort) and forgets it. */
  async logout() {
    clearTimeout(this.refreshTimer);
    try {
      if (this.session.token) await this.call('POST', '/auth/logout', undefined, { retried: true });
    } catch {
      // The token may already be gone; forgetting it is what matters.
    } finally {
      this.session.clear();
    }
  }

  /**
   * scheduleRefresh arranges a refresh when three quarters of the token's
   * remaining life have passed (at least a second from now; setTimeout
   * cannot wait longer than about 24 days, so long waits re-arm).
   */
  scheduleRefresh() {
    clearTimeout(this.refreshTimer);
    if (!this.session.token) return;
    const remaining = this.session.expireAt - Date.now();
    const wait = Math.max(1000, Math.floor(remaining * 0.75));
    const capped = Math.min(wait, 2 ** 31 - 1);
    this.refreshTimer = setTimeout(() => {
      if (capped < wait) this.scheduleRefresh();
      else this.refresh().catch(() => {});
    }, capped);
  }

  /**
   * refresh exchanges the token for a new one (POST /auth/refresh revokes
   * the old one, and the server then closes WebSockets opened with it, so
   * onToken reconnects). Concurrent calls share one request.
   */
  refresh() {
    if (this.refreshing) return this.refreshing;
    const userID = this.session.userID;
    this.refreshing = (async () => {
      try {
        const tok = await this.call('POST', '/auth/refresh', undefined, { retried: true });
        if (this.session.userID === userID) {
          this.session.save(userID, tok);
          this.onToken();
        }
        this.refreshing = null;
        this.scheduleRefresh();
        return tok;
      } catch (err) {
        this.refreshing = null;
        // The server may be unreachable for a moment: try again while the
        // token lives (a lost token already went to onAuthLost).
        clearTimeout(this.refreshTimer);
        if (this.session.token && !isAuthLost(err)) {
          this.refreshTimer = setTimeout(() => this.refresh().catch(() => {}), 5000);
        }
        throw err;
      }
    })();
    return this.refreshing;
  }
}
