// Rendering of single items: a message, a conversation entry, a group
// notification's text. Everything user-supplied goes in as text nodes,
// never as HTML.

import { isNotification, notificationBody } from './conversation.js';

/** STATE_LABELS: what an own message's state reads as, with its tick. */
const STATE_LABELS = {
  sending: ['◷', 'Sending…'],
  accepted: ['✓', 'Accepted'],
  saved: ['✓', 'Saved'],
  delivered: ['✓✓', 'Delivered'],
  read: ['✓✓', 'Read'],
  failed: ['!', 'Not sent'],
};

/** REVOKE_WINDOW_MS is the server's default msg.revoke_window (2 minutes); the server decides. */
export const REVOKE_WINDOW_MS = 2 * 60 * 1000;

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'role' || k === 'type' || k === 'title') e.setAttribute(k, v === true ? '' : String(v));
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

export function timeOf(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  const now = new Date();
  const sameDay = d.toDateString() === now.toDateString();
  return sameDay ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/** messageKey is a message's stable identity in the view. */
export function messageKey(m, me) {
  if (m.sender_id === me && m.client_msg_id) return `c:${m.client_msg_id}`;
  return `s:${m.seq}`;
}

function names(ids, client) {
  return (ids || []).map((id) => client.nameOf(id)).join(', ');
}

/** notificationText is a group notification (msg_type 1501–1513) in words. */
export function notificationText(m, client) {
  const n = notificationBody(m) || {};
  const op = n.op_user_id || m.sender_id;
  const who = op === client.me ? 'You' : client.nameOf(op);
  const about = names(n.user_ids, client);
  const groupName = n.group && n.group.name ? `“${n.group.name}”` : 'the group';
  switch (m.msg_type) {
    case 1501: {
      const others = names((n.user_ids || []).filter((id) => id !== op), client);
      return `${who} created ${groupName}${others ? ` with ${others}` : ''}`;
    }
    case 1502: return `${about || who} joined`;
    case 1503: return `${who} invited ${about}`;
    case 1504: return `${about || who} left the group`;
    case 1505: return `${who} removed ${about}`;
    case 1506: return `${who} made ${names([n.new_owner_id], client)} the owner`;
    case 1507: return `${who} made ${about} ${n.role_level === 60 ? 'an admin' : 'a member'}`;
    case 1508: return `${who} dismissed the group`;
    case 1509: return `${who} changed the group’s ${(n.changed || ['details']).join(', ').replaceAll('_', ' ')}`;
    case 1510: return n.mute_until ? `${who} muted ${about}` : `${who} unmuted ${about}`;
    case 1511: return n.muted ? `${who} muted the group: only the owner and admins can send` : `${who} unmuted the group`;
    case 1512: return `${who} banned ${about}`;
    case 1513: return `${who} lifted the ban of ${about}`;
    case 1600: return `${who} recalled a message`;
    case 1601: return `${who} edited a message`;
    case 1602: return `${who} reacted ${n.emoji || ''}`.trim();
    case 1603: case 1604: return `${who} deleted a message`;
    default: return `Notification (${m.msg_type})`;
  }
}

/** preview is the one-line summary of a message for the conversation list. */
export function preview(m, client) {
  if (!m) return '';
  if (m.status === 'revoked') return 'Message recalled';
  if (m.status === 'deleted') return 'Message deleted';
  if (isNotification(m)) return notificationText(m, client);
  const text = (m.content && m.content.text) || (isMedia(m) ? (m.msg_type === 102 ? '[picture]' : '[file]') : (m.upload ? '[uploading]' : ''));
  const who = m.sender_id === client.me ? 'You: ' : (m.session_type === 3 || m.group_id ? `${client.nameOf(m.sender_id)}: ` : '');
  return who + text;
}

/** MEDIA_FIELDS: the content field of each media message type (docs/media.md). */
const MEDIA_FIELDS = { 102: 'image', 103: 'audio', 104: 'video', 105: 'file' };

/** mediaRef is the object reference (or URL string) a media message carries, or null. */
function mediaRef(m) {
  const field = MEDIA_FIELDS[m.msg_type];
  return field && m.content ? m.content[field] || null : null;
}

function isMedia(m) {
  return mediaRef(m) !== null;
}

/** mediaSig: what a media message's look depends on (the signed URLs as they arrive). */
function mediaSig(m, client) {
  const ref = mediaRef(m);
  if (!ref || typeof ref !== 'object' || !ref.object_id) return '';
  return [client.urlFor(ref.object_id, 'original'), m.msg_type === 102 && ref.has_thumbnail ? client.urlFor(ref.object_id, 'thumbnail') : ''].join(' ');
}

export function sizeText(n) {
  if (!(n >= 0)) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * renderMedia shows a media message: while uploading, its name and a
 * progress bar; a picture as a thumbnail that opens the original; any
 * other object as a download link with its name and size.
 */
function renderMedia(m, client) {
  if (m.upload) {
    const pct = m.upload.total ? Math.round((100 * m.upload.sent) / m.upload.total) : 0;
    return el('div', { class: 'media uploading' },
      el('p', { class: 'text', text: m.upload.name }),
      el('progress', { class: 'upload-progress', max: 100, value: pct, 'aria-label': `Uploading ${m.upload.name}` }),
      el('span', { class: 'upload-pct', text: ` ${pct}%` }));
  }
  const ref = mediaRef(m);
  if (typeof ref === 'string') return el('p', { class: 'text' }, el('a', { href: ref, rel: 'noopener noreferrer', target: '_blank', text: ref }));
  const name = ref.name || 'file';
  if (!ref.object_id) return el('p', { class: 'text', text: name });
  const original = client.urlFor(ref.object_id, 'original');
  if (m.msg_type === 102) {
    const thumb = ref.has_thumbnail ? client.urlFor(ref.object_id, 'thumbnail') : original;
    const img = el('img', { class: 'thumb', alt: name, 'data-object-id': ref.object_id });
    if (thumb) img.src = thumb;
    if (ref.width && ref.height) {
      const scale = Math.min(1, 240 / Math.max(ref.width, ref.height));
      img.width = Math.round(ref.width * scale);
      img.height = Math.round(ref.height * scale);
    }
    return el('a', { class: 'media image', href: original || undefined, target: '_blank', rel: 'noopener', title: `Open ${name}` }, img);
  }
  return el('p', { class: 'text media file' },
    el('a', { class: 'download', href: original || undefined, download: name, rel: 'noopener', 'data-object-id': ref.object_id, text: name }),
    el('span', { class: 'file-size', text: ` (${sizeText(ref.size)})` }));
}

/** textWithMentions renders text with every "@id" of a mentioned user highlighted. */
function textWithMentions(text, at, me) {
  const p = el('p', { class: 'text' });
  if (!at || at.length === 0) {
    p.textContent = text;
    return p;
  }
  const re = /(@[A-Za-z0-9_-]{1,64})/g;
  let last = 0;
  for (const match of text.matchAll(re)) {
    const id = match[1].slice(1);
    if (!at.includes(id)) continue;
    p.append(text.slice(last, match.index));
    p.append(el('mark', { class: id === me || id === 'all' ? 'mention me' : 'mention', text: match[1] }));
    last = match.index + match[1].length;
  }
  p.append(text.slice(last));
  return p;
}

/**
 * renderMessage fills li with m's current look; it returns false when
 * nothing changed (so the DOM is left alone).
 */
export function renderMessage(li, m, c, client, now) {
  const own = m.sender_id === client.me;
  const state = own ? c.stateOf(m) : '';
  const readers = own && c.isGroup && m.seq ? c.readersOf(m) : 0;
  const role = c.isGroup ? client.myRole(c.groupID) : 0;
  const canRecall = m.seq > 0 && m.status === 'normal' && !isNotification(m) && !c.left && !c.dismissed &&
    ((own && state !== 'sending' && state !== 'failed' && now - (m.send_at || now) < REVOKE_WINDOW_MS) ||
     (!own && role >= 60));
  const sender = own ? 'You' : client.nameOf(m.sender_id);
  const revoker = m.revokedBy ? client.nameOf(m.revokedBy) : '';
  const live = m.seq > 0 && m.status === 'normal' && !isNotification(m) && !c.left && !c.dismissed;
  const canEdit = live && own && (m.msg_type === 101 || m.msg_type === 106) && state !== 'sending' && state !== 'failed';
  const canDeleteAll = live && (own || role >= 60);
  const readCount = Math.max(readers, m.readCount || 0);
  const sig = [m.seq, m.status, m.revokedBy, state, readers, m.failReason, canRecall, m.content && m.content.text, sender, revoker,
    isNotification(m) ? notificationText(m, client) : '', m.edit_version, JSON.stringify(m.reactions || []), JSON.stringify(m.quote || null),
    m.editing, m.menuOpen, readCount, live, JSON.stringify(m.upload || null), mediaSig(m, client)].join('|');
  if (li.dataset.sig === sig) return false;
  li.dataset.sig = sig;
  li.replaceChildren();
  li.dataset.seq = m.seq ? String(m.seq) : '';
  li.dataset.sender = m.sender_id || '';
  li.dataset.status = m.status || 'normal';
  li.dataset.clientMsgId = m.client_msg_id || '';
  if (own) li.dataset.state = state;
  else delete li.dataset.state;

  if (isNotification(m) && m.status !== 'revoked') {
    li.className = 'msg system';
    li.append(el('p', { class: 'text', text: notificationText(m, client) }));
    return true;
  }
  const mentioned = !own && c.mentionsMe(m);
  li.className = `msg ${own ? 'own' : 'other'}${mentioned ? ' mentioned' : ''}${m.status === 'revoked' ? ' revoked' : ''}`;
  const bubble = el('div', { class: 'bubble' });
  const meta = el('p', { class: 'meta' },
    el('span', { class: 'sender', text: sender, title: m.sender_id || '' }),
    ' ',
    el('time', { dateTime: m.send_at ? new Date(m.send_at).toISOString() : '', text: timeOf(m.send_at || m.createdAt) }));
  if (mentioned) meta.append(' ', el('span', { class: 'tag', text: '@ you' }));
  bubble.append(meta);
  if (m.quote && m.status === 'normal') {
    const q = m.quote;
    const gone = q.status === 'unavailable' || q.status === 'deleted';
    bubble.append(el('blockquote', { class: 'quote', 'data-quote-seq': q.seq },
      gone ? el('span', { class: 'quote-text', text: 'Message unavailable' })
        : el('span', { class: 'quote-text' }, el('b', { class: 'quote-sender', text: `${client.nameOf(q.sender_id)}: ` }), q.preview || '')));
  }
  if (m.status === 'revoked') {
    const by = m.revokedBy && m.revokedBy !== m.sender_id ? ` by ${revoker}` : '';
    bubble.append(el('p', { class: 'text recalled', text: `${own && !by ? 'You recalled this message' : 'This message was recalled'}${by}` }));
  } else if (m.status === 'deleted') {
    bubble.append(el('p', { class: 'text recalled', text: 'This message was deleted' }));
  } else if (m.editing) {
    const area = el('textarea', { class: 'edit-input', rows: 2, 'aria-label': 'Edit the message', value: (m.content && m.content.text) || '' });
    area.value = (m.content && m.content.text) || '';
    bubble.append(el('div', { class: 'edit-form' }, area,
      el('button', { type: 'button', class: 'link', 'data-action': 'save-edit', text: 'Save' }), ' ',
      el('button', { type: 'button', class: 'link', 'data-action': 'cancel-edit', text: 'Cancel' })));
  } else if (m.upload || isMedia(m)) {
    bubble.append(renderMedia(m, client));
  } else {
    bubble.append(textWithMentions((m.content && m.content.text) || '', m.at_user_ids, client.me));
    if (m.edit_version > 0) bubble.append(el('span', { class: 'edited', title: m.edited_at ? `Edited ${timeOf(m.edited_at)}` : 'Edited', text: '(edited)' }));
  }
  if (m.status === 'normal' && (m.reactions || []).length) {
    const chips = el('p', { class: 'reactions' });
    for (const r of m.reactions) {
      chips.append(el('button', { type: 'button', class: `chip${r.me ? ' mine' : ''}`, 'data-action': 'react', 'data-emoji': r.emoji,
        'aria-pressed': r.me ? 'true' : 'false', title: r.me ? 'Take back your reaction' : 'React too', text: `${r.emoji} ${r.count}` }), ' ');
    }
    bubble.append(chips);
  }
  const foot = el('p', { class: 'foot' });
  if (own && m.status !== 'revoked') {
    const [tick, label] = STATE_LABELS[state] || STATE_LABELS.saved;
    const text = state === 'read' && c.isGroup ? `Read by ${readCount}` : label;
    foot.append(el('span', { class: `state state-${state}`, title: `Delivery state: ${text}` },
      el('span', { class: 'tick', 'aria-hidden': 'true', text: tick }), ' ', el('span', { class: 'state-label', text })));
    if (state === 'failed') {
      foot.append(' ', el('span', { class: 'fail-reason', text: `(${m.failReason}${m.failDetail ? `: ${m.failDetail}` : ''})` }));
      foot.append(' ', el('button', { type: 'button', class: 'link retry', 'data-action': 'retry', text: 'Retry' }));
    }
  }
  if (canRecall) foot.append(' ', el('button', { type: 'button', class: 'link recall', 'data-action': 'recall', text: 'Recall' }));
  if (own && c.isGroup && live) foot.append(' ', el('button', { type: 'button', class: 'link read-by', 'data-action': 'read-by', text: `Read by ${readCount}…` }));
  if (live && !m.editing) {
    foot.append(' ', el('button', { type: 'button', class: 'link reply', 'data-action': 'reply', text: 'Reply' }));
    foot.append(' ', el('button', { type: 'button', class: 'link react', 'data-action': 'react', 'data-emoji': '👍', title: 'React with 👍', text: '👍' }));
    if (canEdit) foot.append(' ', el('button', { type: 'button', class: 'link edit', 'data-action': 'edit', text: 'Edit' }));
    foot.append(' ', el('button', { type: 'button', class: 'link delete', 'data-action': 'delete-menu', 'aria-expanded': m.menuOpen ? 'true' : 'false', text: 'Delete…' }));
    if (m.menuOpen) {
      foot.append(' ', el('span', { class: 'delete-menu', role: 'group', 'aria-label': 'Delete' },
        el('button', { type: 'button', class: 'link', 'data-action': 'delete-self', text: 'Delete for me' }),
        canDeleteAll ? ' ' : null,
        canDeleteAll ? el('button', { type: 'button', class: 'link', 'data-action': 'delete-everyone', text: 'Delete for everyone' }) : null));
    }
  }
  if (foot.childNodes.length) bubble.append(foot);
  li.append(bubble);
  return true;
}

/**
 * conversationItem returns a list entry with a fixed structure, which
 * updateConversation fills in. The nodes are kept across updates: an entry
 * rebuilt between a mouse press and its release would lose the click.
 */
export function conversationItem(id) {
  const btn = el('button', { type: 'button', class: 'conv' },
    el('span', { class: 'conv-top' },
      el('span', { class: 'conv-name' }),
      el('span', { class: 'pin', title: 'Pinned', text: '📌' }),
      el('span', { class: 'mention-marker', title: 'You were mentioned', text: '@' }),
      el('span', { class: 'badge' })),
    el('span', { class: 'conv-preview' }),
    el('span', { class: 'visually-hidden' }));
  return el('li', { 'data-conv-id': id }, btn);
}

/** updateConversation shows c's current state in its entry li. */
export function updateConversation(li, c, client, current) {
  const sig = [client.title(c), c.unread, c.mentions, c.pinned, current, preview(c.latest, client), c.isGroup].join('\u0000');
  if (li.dataset.sig === sig) return;
  li.dataset.sig = sig;
  const q = (cls) => li.querySelector(cls);
  li.classList.toggle('current', current);
  const btn = q('button');
  if (current) btn.setAttribute('aria-current', 'true');
  else btn.removeAttribute('aria-current');
  q('.conv-name').textContent = client.title(c);
  q('.pin').hidden = !c.pinned;
  q('.mention-marker').hidden = !(c.mentions > 0);
  q('.badge').hidden = !(c.unread > 0);
  q('.badge').textContent = c.unread > 99 ? '99+' : String(c.unread);
  q('.conv-preview').textContent = preview(c.latest, client) || (c.isGroup ? 'Group' : 'No messages yet');
  const hidden = [];
  if (c.unread > 0) hidden.push(`${c.unread} unread`);
  if (c.mentions > 0) hidden.push('mentioned you');
  if (c.pinned) hidden.push('pinned');
  q('.visually-hidden').textContent = hidden.length ? `, ${hidden.join(', ')}` : '';
}
