// The signed-in view: binds the page's elements to a Client, re-renders
// what changed (messages are reconciled by key, so focus, scroll position
// and the live region's announcements stay sane), and turns the user's
// actions into client calls.

import { conversationItem, el, messageKey, renderMessage, updateConversation } from './render.js';
import { validID } from './ids.js';
import { SearchPanel } from './search.js';

const $ = (id) => document.getElementById(id);

const STATUS_TEXT = {
  open: 'Connected',
  connecting: 'Connecting…',
  stopped: 'Disconnected',
};

const END_TEXT = {
  kicked: 'This tab was disconnected: you signed in on another tab or device.',
  session_invalid: 'Your session ended: you signed out elsewhere or signed in again.',
  token_revoked: 'Your session ended: you signed out elsewhere or signed in again.',
  token_expired: 'Your session expired.',
  token_invalid: 'Your session is not valid any more.',
  token_missing: 'Please sign in.',
  unauthorized: 'The server refused this session.',
};

/** endText says why a session ended, for the banner or the sign-in page. */
export function endText(reason) {
  return END_TEXT[reason] || `The session ended (${reason}).`;
}

/** splitIDs reads "a, b c" as ["a", "b", "c"]. */
function splitIDs(s) {
  return [...new Set(s.split(/[\s,;]+/).map((x) => x.trim()).filter(Boolean))];
}

function formError(form, text) {
  const p = form.querySelector('.form-error');
  if (p) p.textContent = text || '';
}

export class View {
  constructor(client, { onSignOut, onSessionEnded }) {
    this.client = client;
    this.onSignOut = onSignOut;
    this.onSessionEnded = onSessionEnded;
    this.msgEls = new Map();
    this.convEls = new Map();
    this.shownConv = null;
    this.mention = { items: [], active: 0 };
    this.bind();
    this.unsubscribe = client.onChange(() => this.render());
    // Recall buttons disappear when the window passes; time labels age.
    this.tick = setInterval(() => this.renderMessages(true), 15000);
  }

  destroy() {
    this.unsubscribe();
    clearInterval(this.tick);
    this.listeners.abort();
  }

  bind() {
    this.listeners = new AbortController();
    const opts = { signal: this.listeners.signal };
    const c = this.client;
    $('me').textContent = c.me;
    $('logout').addEventListener('click', () => this.onSignOut(), opts);

    $('new-chat').addEventListener('submit', async (e) => {
      e.preventDefault();
      const form = e.currentTarget;
      const id = $('new-chat-user').value.trim();
      formError(form, '');
      if (!validID(id)) return formError(form, 'A user ID is 1–64 letters, digits, _ or -.');
      try {
        await c.startSingle(id);
        $('new-chat-user').value = '';
        $('composer-input').focus();
      } catch (err) {
        formError(form, err.reason === 'user_not_found' ? `There is no user “${id}”.` : `Could not start the chat: ${err.message}`);
      }
      return undefined;
    }, opts);

    $('conv-list').addEventListener('click', (e) => {
      const li = e.target.closest('li[data-conv-id]');
      if (!li) return;
      const conv = c.convs.get(li.dataset.convId);
      if (conv) c.open(conv).catch((err) => c.notice(`Could not open the conversation: ${err.message}`, 'error'));
    }, opts);

    $('load-earlier').addEventListener('click', async () => {
      if (!c.current) return;
      const scroller = $('scroller');
      const before = scroller.scrollHeight - scroller.scrollTop;
      await c.loadEarlier(c.current).catch((err) => c.notice(`Could not load earlier messages: ${err.message}`, 'error'));
      this.renderMessages();
      scroller.scrollTop = scroller.scrollHeight - before;
    }, opts);

    $('messages').addEventListener('click', (e) => {
      const btn = e.target.closest('button[data-action]');
      if (!btn || !c.current) return;
      const li = btn.closest('li');
      const conv = c.current;
      const m = li.dataset.clientMsgId && li.dataset.sender === c.me ? conv.own(li.dataset.clientMsgId) : conv.msgs.get(Number(li.dataset.seq));
      if (!m) return;
      const fail = (what) => (err) => c.notice(`${what}: ${err.message || err.reason}`, 'error');
      switch (btn.dataset.action) {
        case 'retry': c.retry(conv, m); break;
        case 'recall': c.recall(conv, m); break;
        case 'reply': this.setReply(m); break;
        case 'react': c.toggleReaction(conv, m, btn.dataset.emoji).catch(fail('Could not react')); break;
        case 'edit': m.editing = true; c.changed(); break;
        case 'cancel-edit': m.editing = false; c.changed(); break;
        case 'save-edit': {
          const text = li.querySelector('.edit-input').value.trim();
          m.editing = false;
          if (text && text !== (m.content && m.content.text)) c.editMessage(conv, m, text).catch(fail('Could not edit'));
          c.changed();
          break;
        }
        case 'delete-menu': m.menuOpen = !m.menuOpen; c.changed(); break;
        case 'delete-self':
        case 'delete-everyone':
          m.menuOpen = false;
          c.deleteMessage(conv, m, btn.dataset.action === 'delete-self' ? 'self' : 'everyone').catch(fail('Could not delete'));
          break;
        case 'read-by': this.showReadBy(conv, m).catch(fail('Could not load who read it')); break;
        default: break;
      }
    }, opts);
    $('reply-cancel').addEventListener('click', () => this.setReply(null), opts);

    // Attachments: the button, dropping files on the chat, pasting a picture.
    const sendFiles = (files) => {
      if (!c.current || c.current.left || c.current.dismissed) return;
      for (const f of files) c.sendFile(c.current, f);
      this.stickToBottom = true;
    };
    $('attach').addEventListener('click', () => $('attach-input').click(), opts);
    $('attach-input').addEventListener('change', (e) => {
      sendFiles([...e.target.files]);
      e.target.value = '';
    }, opts);
    const chat = $('scroller').closest('section') || $('scroller');
    chat.addEventListener('dragover', (e) => {
      if (e.dataTransfer && [...e.dataTransfer.types].includes('Files')) {
        e.preventDefault();
        chat.classList.add('dropping');
      }
    }, opts);
    chat.addEventListener('dragleave', () => chat.classList.remove('dropping'), opts);
    chat.addEventListener('drop', (e) => {
      chat.classList.remove('dropping');
      if (!e.dataTransfer || !e.dataTransfer.files.length) return;
      e.preventDefault();
      sendFiles([...e.dataTransfer.files]);
    }, opts);
    $('composer-input').addEventListener('paste', (e) => {
      const files = [...((e.clipboardData && e.clipboardData.files) || [])].filter((f) => f.type.startsWith('image/'));
      if (!files.length) return;
      e.preventDefault();
      sendFiles(files);
    }, opts);
    $('push-toggle').addEventListener('click', () => this.togglePush(), opts);

    const input = $('composer-input');
    $('composer').addEventListener('submit', (e) => {
      e.preventDefault();
      this.sendFromComposer();
    }, opts);
    input.addEventListener('keydown', (e) => this.composerKey(e), opts);
    input.addEventListener('input', () => { this.updateMentions(); if (input.value) this.client.typingNow(); }, opts);
    $('mention-list').addEventListener('mousedown', (e) => {
      const li = e.target.closest('li[data-user]');
      if (!li) return;
      e.preventDefault();
      this.insertMention(li.dataset.user);
    }, opts);

    $('pin').addEventListener('click', () => {
      const conv = c.current;
      if (conv) c.setPinned(conv, !conv.pinned).catch((err) => c.notice(`Could not pin: ${err.message}`, 'error'));
    }, opts);
    $('members').addEventListener('click', () => this.showMembers(), opts);
    $('invite').addEventListener('click', () => this.openDialog('invite-dialog', 'invite-users'), opts);
    $('quit').addEventListener('click', async () => {
      const conv = c.current;
      if (!conv || !window.confirm(`Leave “${c.title(conv)}”? You keep the history up to now.`)) return;
      try {
        await c.quit(conv);
      } catch (err) {
        c.notice(err.reason === 'owner_cannot_quit' ? 'The owner must hand the group to another member before leaving.' : `Could not leave: ${err.message}`, 'error');
      }
    }, opts);
    $('new-group').addEventListener('click', () => this.openDialog('group-dialog', 'group-name'), opts);

    $('group-form').addEventListener('submit', async (e) => {
      e.preventDefault();
      const form = e.currentTarget;
      formError(form, '');
      const ids = splitIDs($('group-members').value).filter((x) => x !== c.me);
      const bad = ids.find((x) => !validID(x));
      if (bad) return formError(form, `“${bad}” is not a user ID.`);
      try {
        await c.createGroup($('group-name').value.trim(), ids);
        form.reset();
        $('group-dialog').close();
        $('composer-input').focus();
      } catch (err) {
        formError(form, err.reason === 'user_not_found' ? `Unknown user: ${err.detail}` : err.message);
      }
      return undefined;
    }, opts);

    $('invite-form').addEventListener('submit', async (e) => {
      e.preventDefault();
      const form = e.currentTarget;
      formError(form, '');
      const ids = splitIDs($('invite-users').value);
      try {
        const res = await c.invite(c.current, ids);
        form.reset();
        $('invite-dialog').close();
        const skipped = res.skipped || [];
        c.notice(`Invited ${(res.invited || []).map((x) => x.user_id).join(', ') || 'nobody new'}${skipped.length ? `; already members: ${skipped.join(', ')}` : ''}.`);
      } catch (err) {
        formError(form, err.reason === 'user_not_found' ? `Unknown user: ${err.detail}` : err.message);
      }
    }, opts);

    for (const btn of document.querySelectorAll('dialog [data-close]')) {
      btn.addEventListener('click', () => btn.closest('dialog').close(), opts);
    }
    $('banner-action').addEventListener('click', () => {
      if (this.bannerAction) this.bannerAction();
    }, opts);
    this.search = new SearchPanel(c, { signal: this.listeners.signal, onOpen: (id, seq) => this.openAt(id, seq) });
  }

  /** openAt opens a search result: its conversation, scrolled to its message, which is marked and focused. */
  async openAt(id, seq) {
    const c = this.client;
    try {
      await c.openAt(id, seq);
    } catch (err) {
      c.notice(`Could not open the conversation: ${err.message}`, 'error');
      return;
    }
    if (this.listeners.signal.aborted) return; // signed out meanwhile
    this.render();
    for (const old of $('messages').querySelectorAll('li[data-found]')) delete old.dataset.found;
    const li = $('messages').querySelector(`li[data-seq="${seq}"]`);
    if (!li) {
      c.notice('That message is further back than one click loads: use “Load earlier messages”.');
      return;
    }
    li.dataset.found = '';
    li.tabIndex = -1;
    li.scrollIntoView({ block: 'center' });
    li.focus({ preventScroll: true });
  }

  openDialog(id, focusID) {
    const d = $(id);
    formError(d, '');
    d.showModal();
    $(focusID).focus();
  }

  /** setReply makes the next message a reply to m (a quote of its seq), or none. */
  setReply(m) {
    this.replyTo = m ? { seq: m.seq, sender_id: m.sender_id, msg_type: m.msg_type, preview: ((m.content && m.content.text) || '').slice(0, 100) } : null;
    $('reply-bar').hidden = !m;
    $('reply-text').textContent = m ? `Replying to ${this.client.nameOf(m.sender_id)}: ${this.replyTo.preview}` : '';
    if (m) $('composer-input').focus();
  }

  /** showReadBy lists who read m and who has not (sdk.readBy). */
  async showReadBy(conv, m) {
    const c = this.client;
    const data = await c.readBy(conv, m);
    $('readby-summary').textContent = `Read by ${data.read_count} of ${data.member_count}`;
    const item = (id, read) => el('li', { 'data-user': id, 'data-read': read ? 'true' : 'false' },
      el('span', { class: 'member-id', text: c.nameOf(id) }), ' ', el('span', { class: 'role', text: read ? 'read' : 'not yet' }));
    $('readby-list').replaceChildren(...(data.read_user_ids || []).map((id) => item(id, true)), ...(data.unread_user_ids || []).map((id) => item(id, false)));
    $('readby-dialog').showModal();
    $('readby-dialog').querySelector('[data-close]').focus();
  }

  /** togglePush turns this browser's notifications on (push.js, docs/push.md) or off. */
  async togglePush() {
    const status = $('push-status');
    const btn = $('push-toggle');
    try {
      const push = await import('./push.js');
      const token = this.client.api.session.token;
      if (this.pushDevice) {
        await push.disablePush({ token, deviceID: this.pushDevice.device_id });
        this.pushDevice = null;
        btn.textContent = 'Enable notifications';
        status.textContent = 'Notifications off';
        return;
      }
      status.textContent = 'Asking for permission…';
      this.pushDevice = await push.enablePush({ token });
      btn.textContent = 'Disable notifications';
      status.textContent = 'Notifications on';
    } catch (err) {
      const why = { unsupported: 'this browser has no Web Push', permission_denied: 'notifications were not allowed', push_provider_unavailable: 'the server does not send Web Push' }[err.reason];
      status.textContent = `Notifications unavailable: ${why || err.message}`;
    }
  }

  async showMembers() {
    const c = this.client;
    const conv = c.current;
    if (!conv || !conv.isGroup) return;
    await c.loadMembers(conv.groupID);
    const list = $('member-list');
    const roles = { 100: 'owner', 60: 'admin', 20: 'member' };
    list.replaceChildren(...(c.members.get(conv.groupID) || []).map((m) => el('li', { 'data-user': m.user_id },
      el('span', { class: 'member-id', text: m.user_id === c.me ? `${m.user_id} (you)` : m.user_id }), ' ',
      el('span', { class: 'role', text: roles[m.role_level] || String(m.role_level) }))));
    $('members-dialog').showModal();
    $('members-dialog').querySelector('[data-close]').focus();
  }

  // ----- composer and mentions -------------------------------------------

  sendFromComposer() {
    const c = this.client;
    const input = $('composer-input');
    const text = input.value.trim();
    if (!text || !c.current) return;
    c.send(c.current, text, this.replyTo);
    this.setReply(null);
    input.value = '';
    this.closeMentions();
    this.stickToBottom = true;
  }

  composerKey(e) {
    const list = $('mention-list');
    if (!list.hidden && this.mention.items.length) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const n = this.mention.items.length;
        this.mention.active = (this.mention.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
        this.renderMentionList();
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        this.insertMention(this.mention.items[this.mention.active]);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        this.closeMentions();
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      this.sendFromComposer();
    }
  }

  /** updateMentions offers group members when the word before the caret starts with @. */
  updateMentions() {
    const c = this.client;
    const conv = c.current;
    const input = $('composer-input');
    const before = input.value.slice(0, input.selectionStart);
    const m = /(?:^|\s)@([A-Za-z0-9_-]*)$/.exec(before);
    if (!conv || !conv.isGroup || !m) return this.closeMentions();
    const q = m[1].toLowerCase();
    const ids = (c.members.get(conv.groupID) || []).map((x) => x.user_id).filter((id) => id !== c.me);
    if (c.myRole(conv.groupID) >= 60) ids.push('all');
    this.mention.items = ids.filter((id) => id.toLowerCase().startsWith(q)).slice(0, 8);
    this.mention.active = 0;
    if (!this.mention.items.length) return this.closeMentions();
    this.renderMentionList();
    return undefined;
  }

  renderMentionList() {
    const list = $('mention-list');
    const input = $('composer-input');
    list.replaceChildren(...this.mention.items.map((id, i) => el('li', {
      id: `mention-${i}`, role: 'option', 'data-user': id, 'aria-selected': i === this.mention.active ? 'true' : 'false',
      text: id === 'all' ? '@all (everyone)' : `@${id}`,
    })));
    list.hidden = false;
    input.setAttribute('aria-controls', 'mention-list');
    input.setAttribute('aria-activedescendant', `mention-${this.mention.active}`);
  }

  closeMentions() {
    $('mention-list').hidden = true;
    this.mention.items = [];
    $('composer-input').removeAttribute('aria-activedescendant');
  }

  insertMention(id) {
    const input = $('composer-input');
    const pos = input.selectionStart;
    const before = input.value.slice(0, pos).replace(/@([A-Za-z0-9_-]*)$/, `@${id} `);
    input.value = before + input.value.slice(pos);
    input.selectionStart = input.selectionEnd = before.length;
    this.closeMentions();
    input.focus();
  }

  // ----- rendering --------------------------------------------------------

  render() {
    const c = this.client;
    if (c.ended) {
      if (c.ended.reason === 'kicked') {
        this.banner(endText('kicked'), 'Reconnect here', () => c.reconnect());
      } else {
        this.onSessionEnded(c.ended.reason);
        return;
      }
    } else {
      this.banner('');
    }
    this.renderStatus();
    this.renderNotices();
    this.renderList();
    this.renderChat();
    this.search.update();
  }

  banner(text, action, fn) {
    const b = $('banner');
    b.hidden = !text;
    $('banner-text').textContent = text;
    $('banner-action').hidden = !action;
    $('banner-action').textContent = action || '';
    this.bannerAction = fn;
  }

  renderStatus() {
    const s = this.client.status;
    let text = STATUS_TEXT[s.state] || s.state;
    if (s.state === 'waiting') text = `Offline — reconnecting in ${Math.ceil((s.retryIn || 0) / 1000)} s`;
    if (s.state === 'stopped' && s.reason) text = `Disconnected (${s.reason})`;
    const p = $('conn');
    if (p.textContent !== text) p.textContent = text;
    p.dataset.state = s.state;
  }

  renderNotices() {
    const box = $('notices');
    const fresh = this.client.notices.filter((n) => Date.now() - n.at < 8000);
    const sig = fresh.map((n) => n.at + n.text).join('|');
    if (box.dataset.sig === sig) return;
    box.dataset.sig = sig;
    box.replaceChildren(...fresh.map((n) => el('p', { class: `notice ${n.kind}`, text: n.text })));
    if (fresh.length) setTimeout(() => this.renderNotices(), 8100);
  }

  renderList() {
    const c = this.client;
    const list = $('conv-list');
    const convs = c.sortedConversations();
    $('conv-empty').hidden = convs.length > 0;
    // Entries are kept and updated in place, and only moved when the order
    // changes, so a click or keyboard focus is never lost to a re-render.
    const focused = document.activeElement && document.activeElement.closest ? document.activeElement.closest('#conv-list li') : null;
    const keep = new Set();
    let next = list.firstElementChild;
    for (const conv of convs) {
      keep.add(conv.id);
      let li = this.convEls.get(conv.id);
      if (!li) {
        li = conversationItem(conv.id);
        this.convEls.set(conv.id, li);
      }
      updateConversation(li, conv, c, conv === c.current);
      if (li !== next) list.insertBefore(li, next);
      else next = next.nextElementSibling;
    }
    for (const [id, li] of this.convEls) {
      if (!keep.has(id)) {
        li.remove();
        this.convEls.delete(id);
      }
    }
    // Moving an entry takes the focus from it: give it back.
    if (focused && focused.isConnected && document.activeElement !== focused.firstElementChild) focused.firstElementChild.focus();
  }


  renderChat() {
    const c = this.client;
    const conv = c.current;
    const has = !!conv;
    $('chat-title').textContent = has ? c.title(conv) : 'Pick a conversation';
    let sub = '';
    if (has && conv.isGroup) {
      const g = c.groups.get(conv.groupID);
      const members = c.members.get(conv.groupID);
      const count = members ? members.length : g ? g.member_count : 0;
      sub = conv.dismissed ? 'This group was dismissed' : conv.left ? 'You are no longer a member' : count ? `${count} members` : 'Group';
    } else if (has) {
      sub = `User ID ${conv.peerID}`;
    }
    const typing = has ? c.typingIn(conv) : [];
    if (typing.length) sub = `${typing.join(', ')} ${typing.length === 1 ? 'is' : 'are'} typing…`;
    $('chat-sub').textContent = sub;
    $('pin').hidden = !has || c.unsupported.has('list');
    $('pin').textContent = has && conv.pinned ? 'Unpin' : 'Pin';
    $('pin').setAttribute('aria-pressed', has && conv.pinned ? 'true' : 'false');
    const activeGroup = has && conv.isGroup && !conv.left && !conv.dismissed;
    $('members').hidden = !activeGroup;
    $('invite').hidden = !activeGroup;
    $('quit').hidden = !activeGroup;
    const composer = $('composer');
    composer.hidden = !has;
    const closed = has && conv.isGroup && (conv.left || conv.dismissed);
    $('composer-input').disabled = closed;
    composer.querySelector('button[type=submit]').disabled = closed;
    $('composer-note').textContent = closed ? (conv.dismissed ? 'The group was dismissed: no new messages.' : 'You left this group: you can read the history but not send.') : '';
    this.renderMessages();
  }

  renderMessages(force = false) {
    const c = this.client;
    const conv = c.current;
    const list = $('messages');
    const scroller = $('scroller');
    if (conv !== this.shownConv) {
      this.shownConv = conv;
      this.msgEls.clear();
      list.setAttribute('aria-busy', 'true');
      list.replaceChildren();
      this.stickToBottom = true;
    }
    if (!conv) {
      $('chat-empty').hidden = false;
      $('load-earlier').hidden = true;
      $('history-start').hidden = true;
      return;
    }
    const atBottom = this.stickToBottom || scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
    const msgs = conv.visible();
    const now = Date.now();
    const keep = new Set();
    let next = list.firstElementChild;
    for (const m of msgs) {
      const key = messageKey(m, c.me);
      keep.add(key);
      let li = this.msgEls.get(key);
      if (!li) {
        li = document.createElement('li');
        li.dataset.key = key;
        this.msgEls.set(key, li);
      }
      if (force) delete li.dataset.sig;
      renderMessage(li, m, conv, c, now);
      if (li !== next) list.insertBefore(li, next);
      else next = next.nextElementSibling;
    }
    for (const [key, li] of this.msgEls) {
      if (!keep.has(key)) {
        li.remove();
        this.msgEls.delete(key);
      }
    }
    $('chat-empty').hidden = true;
    $('load-earlier').hidden = !conv.anchored || conv.allEarlier;
    $('history-start').hidden = !conv.allEarlier || msgs.length === 0;
    list.removeAttribute('aria-busy');
    if (atBottom) scroller.scrollTop = scroller.scrollHeight;
    this.stickToBottom = false;
  }
}
