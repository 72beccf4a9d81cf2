// Groups: notifications (msg_type 1501–1509 and the 1600 recall notice)
// applied to the client's state, the member list, and the group actions.
// Installed on Client.prototype (client.js); `this` is the Client.

import { notificationBody } from './conversation.js';
import { groupConversationID, MSG_REVOKE_NOTIFICATION } from './ids.js';

export const GroupMethods = {
  onNotification(c, m) {
    const n = notificationBody(m);
    if (!n) return;
    if (m.msg_type === MSG_REVOKE_NOTIFICATION) {
      // A recall, announced in seq order to everyone in the conversation.
      this.markRevoked(c, n.seq, n.revoker_id);
      return;
    }
    if (!c.isGroup) return;
    const about = n.user_ids || [];
    if (m.msg_type >= 1502 && m.msg_type <= 1505) this.ensureGroup(c.groupID, true); // member_count
    switch (m.msg_type) {
      case 1504:
      case 1505:
        if (about.includes(this.me)) c.left = true;
        break;
      case 1502:
      case 1503:
        if (about.includes(this.me)) c.left = false;
        break;
      case 1508:
        c.dismissed = true;
        break;
      default:
        break;
    }
    if (n.group) this.groups.set(n.group.group_id, n.group);
    if (this.members.has(c.groupID)) this.loadMembers(c.groupID);
  },

  async loadMembers(groupID) {
    try {
      const data = await this.api.get(`/group/members?group_id=${encodeURIComponent(groupID)}&offset=0&limit=500`);
      this.members.set(groupID, data.members || []);
      for (const x of data.members || []) this.ensureUser(x.user_id);
      this.changed();
    } catch (err) {
      if (err.reason === 'not_group_member' || err.reason === 'member_not_active') {
        this.conv(groupConversationID(groupID)).left = true;
        this.changed();
      }
    }
  },

  myRole(groupID) {
    const me = (this.members.get(groupID) || []).find((x) => x.user_id === this.me);
    return me ? me.role_level : 0;
  },

  async createGroup(name, memberIDs) {
    const g = await this.api.post('/group/create', { name, member_ids: memberIDs });
    this.groups.set(g.group_id, g);
    const c = this.conv(groupConversationID(g.group_id));
    c.listed = true;
    await this.open(c);
    return c;
  },

  async invite(c, userIDs) {
    const res = await this.api.post('/group/invite', { group_id: c.groupID, user_ids: userIDs });
    await this.loadMembers(c.groupID);
    return res;
  },

  async quit(c) {
    await this.api.post('/group/quit', { group_id: c.groupID });
    c.left = true;
    this.members.delete(c.groupID);
    this.changed();
  },
};
