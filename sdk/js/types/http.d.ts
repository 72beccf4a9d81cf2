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
    constructor(opts: HttpOptions);
    base: string;
    token: (hint?: {
        reason: string;
    }) => Promise<string>;
    defaultFetch: typeof fetch;
    fetchFn: typeof fetch;
    /**
     * call sends one request. query values that are undefined are left out;
     * arrays are joined with commas.
     * @param {'GET' | 'POST' | 'PUT' | 'DELETE'} method
     * @param {string} path  e.g. "/group/info"
     * @param {{query?: Record<string, any>, body?: any, form?: FormData, signal?: AbortSignal, auth?: boolean, tokenOverride?: string}} [opts]
     *   auth false: no token; tokenOverride: this token instead of the client's; form: a multipart body instead of JSON
     * @returns {Promise<any>}
     */
    call(method: "GET" | "POST" | "PUT" | "DELETE", path: string, opts?: {
        query?: Record<string, any>;
        body?: any;
        form?: FormData;
        signal?: AbortSignal;
        auth?: boolean;
        tokenOverride?: string;
    }): Promise<any>;
    /** userInfo: GET /user/info; without userId, the caller's own profile. @param {string} [userId] */
    userInfo(userId?: string): Promise<any>;
    /** updateUser: PUT /user/update with the fields to change (nickname, face_url, …). @param {Record<string, any>} fields */
    updateUser(fields: Record<string, any>): Promise<any>;
    /** searchUsers: GET /user/search → {users}. @param {string} keyword @param {number} [limit] */
    searchUsers(keyword: string, limit?: number): Promise<any>;
    /** blockUser: POST /user/block. @param {string} userId */
    blockUser(userId: string): Promise<any>;
    /** unblockUser: POST /user/unblock. @param {string} userId */
    unblockUser(userId: string): Promise<any>;
    /** blocks: GET /user/blocks → the caller's block list. @param {Page} [page] */
    blocks(page?: Page): Promise<any>;
    /**
     * presence: GET /user/presence for 1–100 users who share a conversation
     * with the caller (others are left out of the answer).
     * @param {string[]} userIds
     */
    presence(userIds: string[]): Promise<any>;
    /** createGroup: POST /group/create ({name, member_ids?, …}) → the group. @param {Record<string, any>} body */
    createGroup(body: Record<string, any>): Promise<any>;
    /** joinGroup: POST /group/join → the member (or a pending application). @param {string} groupId @param {Record<string, any>} [extra] */
    joinGroup(groupId: string, extra?: Record<string, any>): Promise<any>;
    /** inviteToGroup: POST /group/invite. @param {string} groupId @param {string[]} userIds */
    inviteToGroup(groupId: string, userIds: string[]): Promise<any>;
    /** kickFromGroup: POST /group/kick. @param {string} groupId @param {string[]} userIds */
    kickFromGroup(groupId: string, userIds: string[]): Promise<any>;
    /** quitGroup: POST /group/quit. @param {string} groupId */
    quitGroup(groupId: string): Promise<any>;
    /** dismissGroup: POST /group/dismiss (the owner). @param {string} groupId */
    dismissGroup(groupId: string): Promise<any>;
    /** updateGroup: POST /group/update ({group_id, name?, …}). @param {Record<string, any>} body */
    updateGroup(body: Record<string, any>): Promise<any>;
    /** transferGroup: POST /group/transfer to a new owner. @param {string} groupId @param {string} newOwnerId */
    transferGroup(groupId: string, newOwnerId: string): Promise<any>;
    /** setGroupRole: POST /group/set_role ({group_id, user_id, role}). @param {Record<string, any>} body */
    setGroupRole(body: Record<string, any>): Promise<any>;
    /** muteGroupMember: POST /group/mute_member ({group_id, user_id, duration_ms…}). @param {Record<string, any>} body */
    muteGroupMember(body: Record<string, any>): Promise<any>;
    /** groupInfo: GET /group/info. @param {string} groupId */
    groupInfo(groupId: string): Promise<any>;
    /** groupMembers: GET /group/members → {members, total}. @param {string} groupId @param {{offset?: number, limit?: number}} [page] */
    groupMembers(groupId: string, page?: {
        offset?: number;
        limit?: number;
    }): Promise<any>;
    /** groups: GET /group/list → {groups, next_cursor} (the caller's groups, a page). @param {Page} [page] */
    groups(page?: Page): Promise<any>;
    /** searchGroups: GET /group/search → {groups}. @param {string} keyword @param {number} [limit] */
    searchGroups(keyword: string, limit?: number): Promise<any>;
    /**
     * conversations: GET /conversation/list → {conversations, total}, pinned
     * first, then by newest message (limit clamped at 100).
     * @param {{offset?: number, limit?: number}} [page]
     */
    conversations(page?: {
        offset?: number;
        limit?: number;
    }): Promise<any>;
    /** updateConversation: PUT /conversation/update ({conversation_id, is_pinned?, recv_msg_opt?}). @param {Record<string, any>} body */
    updateConversation(body: Record<string, any>): Promise<any>;
    /** deleteConversation: POST /conversation/delete (hides it until its next message). @param {string} conversationId */
    deleteConversation(conversationId: string): Promise<any>;
    /**
     * search: POST /msg/search ({keyword, conversation_id?, sender_id?, msg_types?,
     * from?, to?, cursor?, limit?, order?}) → {results, next_cursor} (docs/search.md).
     * @param {Record<string, any>} query
     */
    search(query: Record<string, any>): Promise<any>;
    /** edit: POST /msg/edit ({conversation_id, seq, content: {text}}) → the edited message's version. @param {Record<string, any>} body */
    edit(body: Record<string, any>): Promise<any>;
    /** edits: GET /msg/edits → a message's earlier versions, oldest first. @param {string} conversationId @param {number} seq */
    edits(conversationId: string, seq: number): Promise<any>;
    /** deleteMessages: POST /msg/delete ({conversation_id, seqs (1–100), scope: "self" | "everyone"}). @param {Record<string, any>} body */
    deleteMessages(body: Record<string, any>): Promise<any>;
    /** react: POST /msg/reaction ({conversation_id, seq, emoji, op: "add" | "remove"}). @param {Record<string, any>} body */
    react(body: Record<string, any>): Promise<any>;
    /**
     * readBy: GET /msg/read_by → {read_count, member_count, read_user_ids, unread_user_ids, next_cursor}.
     * @param {string} conversationId @param {number} seq @param {Page} [page]
     */
    readBy(conversationId: string, seq: number, page?: Page): Promise<any>;
    /** report: POST /msg/report ({conversation_id, seq, reason}) → {report_id, status, created_at, duplicate}. @param {Record<string, any>} body */
    report(body: Record<string, any>): Promise<any>;
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
    upload(file: Blob, opts?: {
        name?: string;
        purpose?: "message" | "avatar";
        onProgress?: (sent: number, total: number) => void;
        signal?: AbortSignal;
    }): Promise<any>;
    /**
     * objectUrl: GET /object/url → {url, expires_at}: a signed URL that needs
     * no token, for one variant, until expires_at (Unix ms). A URL the server
     * gives relative (the local backend without objects.public_url) comes
     * back absolute, resolved against the client's url.
     * @param {string} objectId @param {'original' | 'thumbnail'} [variant]
     * @returns {Promise<{url: string, expires_at: number}>}
     */
    objectUrl(objectId: string, variant?: "original" | "thumbnail"): Promise<{
        url: string;
        expires_at: number;
    }>;
    /** objectInfo: GET /object/info → the object's metadata. @param {string} objectId */
    objectInfo(objectId: string): Promise<any>;
}
export type HttpOptions = {
    /**
     * the server's HTTP base, e.g. "https://chat.example.com"
     */
    url: string;
    /**
     * the token to send (the client's current one)
     */
    token: (hint?: {
        reason: string;
    }) => Promise<string>;
    /**
     * default globalThis.fetch
     */
    fetch?: typeof fetch | undefined;
};
export type Page = {
    /**
     * next_cursor of the previous page; absent for the first
     */
    cursor?: string | undefined;
    limit?: number | undefined;
};
