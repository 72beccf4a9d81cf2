// Entry point: the sign-in page, or the chat when this tab has a session.
// window.nexo exposes the running client for debugging and for the
// browser tests (docs/web.md).

import { Api, Session } from './api.js';
import { Client } from './client.js';
import { View, endText } from './view.js';

const $ = (id) => document.getElementById(id);

const session = new Session();
let client = null;
let view = null;

const api = new Api(session, {
  onAuthLost: (err) => signOut(err.reason),
  onToken: () => { if (client) client.tokenRefreshed(); },
});

window.nexo = { api, session, get client() { return client; } };

function formError(form, text) {
  form.querySelector('.form-error').textContent = text || '';
}

function busy(form, on) {
  for (const b of form.querySelectorAll('button')) b.disabled = on;
}

/** showSignIn shows the sign-in page, with why the last session ended when known. */
function showSignIn(reason) {
  $('app').hidden = true;
  $('signin').hidden = false;
  const p = $('signin-reason');
  p.hidden = !reason;
  p.textContent = reason ? endText(reason) : '';
  document.title = 'Nexo chat — sign in';
  $('login-user').focus();
}

function showChat() {
  $('signin').hidden = true;
  $('app').hidden = false;
  document.title = `Nexo chat — ${session.userID}`;
  client = new Client(api);
  view = new View(client, { onSignOut: () => signOut(''), onSessionEnded: (reason) => signOut(reason, false) });
  client.start();
  api.scheduleRefresh();
  view.render();
  $('new-chat-user').focus();
}

/** signOut stops the client; revoke says whether to also revoke the token (a user's "Sign out"). */
async function signOut(reason, revoke = true) {
  if (client) {
    client.stop();
    view.destroy();
    client = null;
    view = null;
  }
  if (revoke && !reason) await api.logout();
  else {
    clearTimeout(api.refreshTimer);
    session.clear();
  }
  showSignIn(reason);
}

$('login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const form = e.currentTarget;
  formError(form, '');
  busy(form, true);
  try {
    await api.login($('login-user').value.trim(), $('login-password').value);
    form.reset();
    showChat();
  } catch (err) {
    formError(form, err.reason === 'bad_credentials' ? 'Wrong user ID or password.' : `Could not sign in: ${err.message}`);
  } finally {
    busy(form, false);
  }
});

$('register-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const form = e.currentTarget;
  formError(form, '');
  busy(form, true);
  const userID = $('register-user').value.trim();
  const password = $('register-password').value;
  try {
    await api.register(userID, $('register-nickname').value.trim(), password);
    await api.login(userID, password);
    form.reset();
    showChat();
  } catch (err) {
    formError(form, err.reason === 'user_exists' ? `The user ID “${userID}” is taken.` : `Could not create the account: ${err.message}`);
  } finally {
    busy(form, false);
  }
});

if (session.token) showChat();
else showSignIn('');
