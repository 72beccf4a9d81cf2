// The HTTP half of the API (docs/openapi.yaml): every route answers the
// envelope {err_code, err_msg, data}. Typed methods for users, presence,
// groups, conversations and search live here; new features (media upload,
// message actions) add their methods to this class the same way.

import { NexoError } from './protocol.js';

/**
 * @typedef {object} HttpOptions
 * @property {string} url                       the server's HTTP base, e.g. "https://chat.example.com"
 * @property {(hint?: {reason: string}) => Promise<string>} token  the token to send (the client's current one)
 * @property {typeof fetch} [fetch]              default globalThis.fetch
 */

/**
 * @typedef {object} Page
 * @property {string} [cursor]  next_cursor of the previous page; absent for the first
 * @property {number} [limit]
 */

/**
 * HttpApi calls the server's HTTP routes with the client's token (Bearer).
 * Every method resolves with the envelope's `data` or rejects with a
 * NexoError whose reason is the server's (status in err.status).
 */
export class HttpApi {
  /** @param {HttpOptions} opts */
  constructor(opts) {
    this.base = opts.url.replace(/\/+$/, '');
    this.token = opts.token;
    this.defaultFetch = globalThis.fetch && globalThis.fetch.bind(globalThis);
    this.fetchFn = opts.fetch || this.defaultFetch;
  }

  /**
   * call sends one request. query values that are undefined are left out;
   * arrays are joined with commas.
   * @param {'GET' | 'POST' | 'PUT' | 'DELETE'} method
   * @param {string} path  e.g. "/group/info"
   * @param {{query?: Record<string, any>, body?: any, form?: FormData, signal?: AbortSignal, auth?: boolean, tokenOverride?: string}} [opts]
   *   auth false: no token; tokenOverride: this token instead of the client's; form: a multipart body instead of JSON
   * @returns {Promise<any>}
   */
  async call(method, path, opts = {}) {
    let url = this.base + path;
    if (opts.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.query)) {
        if (v === undefined || v === null) continue;
        q.set(k, Array.isArray(v) ? v.join(',') : String(v));
      }
      const s = q.toString();
      if (s) url += `?${s}`;
    }
    /** @type {Record<string, string>} */
    const headers = {};
    if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
    if (opts.auth !== false) headers.Authorization = `Bearer ${opts.tokenOverride || await this.token()}`;
    let res;
    try {
      const body = opts.form || (opts.body === undefined ? undefined : JSON.stringify(opts.body));
      res = await this.fetchFn(url, { method, headers, body, cache: 'no-store', signal: opts.signal });
    } catch (e) {
      if (opts.signal && opts.signal.aborted) throw new NexoError('aborted', 'the request was aborted');
      throw new NexoError('network_error', String(e));
    }
    let env = null;
    try {
      env = await res.json();
    } catch {
      throw new NexoError(`http_${res.status}`, res.statusText, { status: res.status });
    }
    if (env && env.err_code === 0) return env.data || {};
    const data = (env && env.data) || {};
    throw new NexoError(data.reason || (env && env.err_msg) || `http_${res.status}`, data.detail || '', { errCode: env && env.err_code, status: res.status, data });
  }

  // ----- users -----------------------------------------------------------

  /** userInfo: GET /user/info; without userId, the caller's own profile. @param {string} [userId] */
  userInfo(userId) { return this.call('GET', '/user/info', { query: { user_id: userId } }); }

  /** updateUser: PUT /user/update with the fields to change (nickname, face_url, …). @param {Record<string, any>} fields */
  updateUser(fields) { return this.call('PUT', '/user/update', { body: fields }); }

  /** searchUsers: GET /user/search → {users}. @param {string} keyword @param {number} [limit] */
  searchUsers(keyword, limit) { return this.call('GET', '/user/search', { query: { keyword, limit } }); }

  /** blockUser: POST /user/block. @param {string} userId */
  blockUser(userId) { return this.call('POST', '/user/block', { body: { user_id: userId } }); }

  /** unblockUser: POST /user/unblock. @param {string} userId */
  unblockUser(userId) { return this.call('POST', '/user/unblock', { body: { user_id: userId } }); }

  /** blocks: GET /user/blocks → the caller's block list. @param {Page} [page] */
  blocks(page = {}) { return this.call('GET', '/user/blocks', { query: page }); }

  // ----- presence ----------------------------------------------------------

  /**
   * presence: GET /user/presence for 1–100 users who share a conversation
   * with the caller (others are left out of the answer).
   * @param {string[]} userIds
   */
  presence(userIds) { return this.call('GET', '/user/presence', { query: { user_ids: userIds } }); }

  // ----- groups ------------------------------------------------------------

  /** createGroup: POST /group/create ({name, member_ids?, …}) → the group. @param {Record<string, any>} body */
  createGroup(body) { return this.call('POST', '/group/create', { body }); }

  /** joinGroup: POST /group/join → the member (or a pending application). @param {string} groupId @param {Record<string, any>} [extra] */
  joinGroup(groupId, extra = {}) { return this.call('POST', '/group/join', { body: { group_id: groupId, ...extra } }); }

  /** inviteToGroup: POST /group/invite. @param {string} groupId @param {string[]} userIds */
  inviteToGroup(groupId, userIds) { return this.call('POST', '/group/invite', { body: { group_id: groupId, user_ids: userIds } }); }

  /** kickFromGroup: POST /group/kick. @param {string} groupId @param {string[]} userIds */
  kickFromGroup(groupId, userIds) { return this.call('POST', '/group/kick', { body: { group_id: groupId, user_ids: userIds } }); }

  /** quitGroup: POST /group/quit. @param {string} groupId */
  quitGroup(groupId) { return this.call('POST', '/group/quit', { body: { group_id: groupId } }); }

  /** dismissGroup: POST /group/dismiss (the owner). @param {string} groupId */
  dismissGroup(groupId) { return this.call('POST', '/group/dismiss', { body: { group_id: groupId } }); }

  /** updateGroup: POST /group/update ({group_id, name?, …}). @param {Record<string, any>} body */
  updateGroup(body) { return this.call('POST', '/group/update', { body }); }

  /** transferGroup: POST /group/transfer to a new owner. @param {string} groupId @param {string} newOwnerId */
  transferGroup(groupId, newOwnerId) { return this.call('POST', '/group/transfer', { body: { group_id: groupId, new_owner_id: newOwnerId } }); }

  /** setGroupRole: POST /group/set_role ({group_id, user_id, role}). @param {Record<string, any>} body */
  setGroupRole(body) { return this.call('POST', '/group/set_role', { body }); }

  /** muteGroupMember: POST /group/mute_member ({group_id, user_id, duration_ms…}). @param {Record<string, any>} body */
  muteGroupMember(body) { return this.call('POST', '/group/mute_member', { body }); }

  /** groupInfo: GET /group/info. @param {string} groupId */
  groupInfo(groupId) { return this.call('GET', '/group/info', { query: { group_id: groupId } }); }

  /** groupMembers: GET /group/members → {members, total}. @param {string} groupId @param {{offset?: number, limit?: number}} [page] */
  groupMembers(groupId, page = {}) { return this.call('GET', '/group/members', { query: { group_id: groupId, ...page } }); }

  /** groups: GET /group/list → {groups, next_cursor} (the caller's groups, a page). @param {Page} [page] */
  groups(page = {}) { return this.call('GET', '/group/list', { query: page }); }

  /** searchGroups: GET /group/search → {groups}. @param {string} keyword @param {number} [limit] */
  searchGroups(keyword, limit) { return this.call('GET', '/group/search', { query: { keyword, limit } }); }

  // ----- conversations -------------------------------------------------------

  /**
   * conversations: GET /conversation/list → {conversations, total}, pinned
   * first, then by newest message (limit clamped at 100).
   * @param {{offset?: number, limit?: number}} [page]
   */
  conversations(page = {}) { return this.call('GET', '/conversation/list', { query: { offset: page.offset || 0, limit: page.limit || 100 } }); }

  /** updateConversation: PUT /conversation/update ({conversation_id, is_pinned?, recv_msg_opt?}). @param {Record<string, any>} body */
  updateConversation(body) { return this.call('PUT', '/conversation/update', { body }); }

  /** deleteConversation: POST /conversation/delete (hides it until its next message). @param {string} conversationId */
  deleteConversation(conversationId) { return this.call('POST', '/conversation/delete', { body: { conversation_id: conversationId } }); }

  // ----- search --------------------------------------------------------------

  /**
   * search: POST /msg/search ({keyword, conversation_id?, sender_id?, msg_types?,
   * from?, to?, cursor?, limit?, order?}) → {results, next_cursor} (docs/search.md).
   * @param {Record<string, any>} query
   */
  search(query) { return this.call('POST', '/msg/search', { body: query }); }

  // ----- message actions (docs/actions.md) ------------------------------------

  /** edit: POST /msg/edit ({conversation_id, seq, content: {text}}) → the edited message's version. @param {Record<string, any>} body */
  edit(body) { return this.call('POST', '/msg/edit', { body }); }

  /** edits: GET /msg/edits → a message's earlier versions, oldest first. @param {string} conversationId @param {number} seq */
  edits(conversationId, seq) { return this.call('GET', '/msg/edits', { query: { conversation_id: conversationId, seq } }); }

  /** deleteMessages: POST /msg/delete ({conversation_id, seqs (1–100), scope: "self" | "everyone"}). @param {Record<string, any>} body */
  deleteMessages(body) { return this.call('POST', '/msg/delete', { body }); }

  /** react: POST /msg/reaction ({conversation_id, seq, emoji, op: "add" | "remove"}). @param {Record<string, any>} body */
  react(body) { return this.call('POST', '/msg/reaction', { body }); }

  /**
   * readBy: GET /msg/read_by → {read_count, member_count, read_user_ids, unread_user_ids, next_cursor}.
   * @param {string} conversationId @param {number} seq @param {Page} [page]
   */
  readBy(conversationId, seq, page = {}) { return this.call('GET', '/msg/read_by', { query: { conversation_id: conversationId, seq, ...page } }); }

  /** report: POST /msg/report ({conversation_id, seq, reason}) → {report_id, status, created_at, duplicate}. @param {Record<string, any>} body */
  report(body) { return this.call('POST', '/msg/report', { body }); }

  // ----- media (docs/media.md) --------------------------------------------------

  /**
   * upload: POST /object/upload (multipart/form-data, field `file`, up to
   * objects.max_direct_bytes) → the object {object_id, name, content_type,
   * size, sha256, width?, height?, has_thumbnail}. onProgress gets
   * (sentBytes, totalBytes) as the body goes out — with XMLHttpRequest where
   * there is one (browsers); elsewhere once, at the end.
   * @param {Blob} file
   * @param {{name?: string, purpose?: 'message' | 'avatar', onProgress?: (sent: number, total: number) => void, signal?: AbortSignal}} [opts]
   * @returns {Promise<any>}
   */
  async upload(file, opts = {}) {
    const form = new FormData();
    form.set('file', file, opts.name || /** @type {any} */ (file).name || 'file');
    if (opts.purpose) form.set('purpose', opts.purpose);
    const url = `${this.base}/object/upload`;
    const token = await this.token();
    const total = file.size;
    const XHR = /** @type {any} */ (globalThis).XMLHttpRequest;
    if (!XHR || this.fetchFn !== this.defaultFetch) {
      const data = await this.call('POST', '/object/upload', { form, signal: opts.signal });
      if (opts.onProgress) opts.onProgress(total, total);
      return data;
    }
    const { status, text } = await new Promise((resolve, reject) => {
      const xhr = new XHR();
      xhr.open('POST', url);
      xhr.setRequestHeader('Authorization', `Bearer ${token}`);
      if (opts.onProgress) xhr.upload.onprogress = (/** @type {ProgressEvent} */ e) => opts.onProgress && opts.onProgress(e.loaded, e.lengthComputable ? e.total : total);
      xhr.onload = () => resolve({ status: xhr.status, text: xhr.responseText });
      xhr.onerror = () => reject(new NexoError('network_error', 'the upload failed'));
      xhr.onabort = () => reject(new NexoError('aborted', 'the upload was aborted'));
      if (opts.signal) opts.signal.addEventListener('abort', () => xhr.abort());
      xhr.send(form);
    });
    return envelopeData(status, text);
  }

  /**
   * objectUrl: GET /object/url → {url, expires_at}: a signed URL that needs
   * no token, for one variant, until expires_at (Unix ms). A URL the server
   * gives relative (the local backend without objects.public_url) comes
   * back absolute, resolved against the client's url.
   * @param {string} objectId @param {'original' | 'thumbnail'} [variant]
   * @returns {Promise<{url: string, expires_at: number}>}
   */
  async objectUrl(objectId, variant = 'original') {
    const data = await this.call('GET', '/object/url', { query: { object_id: objectId, variant } });
    if (data.url) data.url = new URL(data.url, `${this.base}/`).toString();
    return data;
  }

  /** objectInfo: GET /object/info → the object's metadata. @param {string} objectId */
  objectInfo(objectId) { return this.call('GET', '/object/info', { query: { object_id: objectId } }); }
}

/**
 * envelopeData reads an answer's envelope: its data, or a NexoError.
 * @param {number} status @param {string} text
 * @returns {any}
 */
function envelopeData(status, text) {
  let env = null;
  try {
    env = JSON.parse(text);
  } catch {
    throw new NexoError(`http_${status}`, '', { status });
  }
  if (env && env.err_code === 0) return env.data || {};
  const data = (env && env.data) || {};
  throw new NexoError(data.reason || (env && env.err_msg) || `http_${status}`, data.detail || '', { errCode: env && env.err_code, status, data });
}
