// Nexo's Web Push service worker (docs/push.md). Registered by push.js; it
// needs no page to be open: it shows a notification for each push the
// server sends, withdraws it when the message is recalled, and opens the
// conversation when the notification is clicked.
//
// The payload is the server's Notification as JSON: kind ("message" or
// "recall"), conversation_id, title, body, badge, server_msg_id, seq, ...

'use strict';

// tagOf groups a conversation's notifications: a newer one replaces the
// older (the group window's collapsing, on the device).
function tagOf(n) {
  return 'nexo:' + (n.conversation_id || '');
}

// payloadOf reads the push's JSON; an unreadable push shows a generic line
// (a push that shows nothing costs the site its userVisibleOnly grant).
function payloadOf(event) {
  try {
    return event.data ? event.data.json() : {};
  } catch (e) {
    return {};
  }
}

async function onPush(n) {
  const tag = tagOf(n);
  if (n.kind === 'recall') {
    // A silent update: close what was shown for the conversation if it was
    // the recalled message.
    const shown = await self.registration.getNotifications({ tag });
    for (const s of shown) {
      if (!s.data || s.data.server_msg_id === n.server_msg_id) {
        s.close();
      }
    }
    return;
  }
  if (navigator.setAppBadge && typeof n.badge === 'number') {
    navigator.setAppBadge(n.badge).catch(() => {});
  }
  await self.registration.showNotification(n.title || 'New message', {
    body: n.body || '',
    tag,
    renotify: true,
    data: { conversation_id: n.conversation_id, server_msg_id: n.server_msg_id, seq: n.seq },
  });
}

self.addEventListener('push', (event) => {
  event.waitUntil(onPush(payloadOf(event)));
});

// urlOf is the page that opens the conversation.
function urlOf(data) {
  const base = new URL('/', self.location.origin);
  if (data && data.conversation_id) {
    base.hash = '#/c/' + encodeURIComponent(data.conversation_id);
  }
  return base.href;
}

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = urlOf(event.notification.data);
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
    for (const w of windows) {
      if (new URL(w.url).origin === self.location.origin) {
        await w.focus();
        if (w.navigate) {
          await w.navigate(url).catch(() => {});
        }
        w.postMessage({ type: 'nexo-open-conversation', conversation_id: event.notification.data && event.notification.data.conversation_id });
        return;
      }
    }
    await self.clients.openWindow(url);
  })());
});
