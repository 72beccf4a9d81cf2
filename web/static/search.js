// Message search: the search box over all conversations or inside the
// open one (POST /msg/search), its results with the matched ranges
// marked, and opening a result's conversation at its seq. The server
// sends offsets, never markup: a result's text goes in as text nodes and
// only the <mark> elements around the ranges are ours (docs/search.md).

import { el, timeOf } from './render.js';

const $ = (id) => document.getElementById(id);

/** SEARCH_LIMIT is one page of results. */
const SEARCH_LIMIT = 20;

/** matchedText is the text of m that the highlight's ranges index (its field). */
export function matchedText(m, field) {
  const content = m.content || {};
  if (field === 'file') return typeof content.file === 'string' ? content.file : '';
  if (field === 'search_text') {
    try {
      const custom = typeof content.custom === 'string' ? JSON.parse(content.custom) : content.custom;
      return custom && typeof custom.search_text === 'string' ? custom.search_text : '';
    } catch {
      return '';
    }
  }
  return content.text || '';
}

/**
 * highlighted returns a <span> holding text with each range [start, end)
 * (UTF-16 code units, as String.prototype.slice counts) in a <mark>.
 * Ranges out of order, overlapping or past the end are clamped, so a
 * malformed answer cannot throw or duplicate text.
 */
export function highlighted(text, ranges) {
  const p = el('span', { class: 'result-text' });
  let at = 0;
  const sorted = [...(ranges || [])].sort((a, b) => a.start - b.start);
  for (const r of sorted) {
    const start = Math.max(at, Math.min(text.length, r.start | 0));
    const end = Math.max(start, Math.min(text.length, r.end | 0));
    if (end === start) continue;
    if (start > at) p.append(document.createTextNode(text.slice(at, start)));
    p.append(el('mark', { class: 'hit', text: text.slice(start, end) }));
    at = end;
  }
  if (at < text.length) p.append(document.createTextNode(text.slice(at)));
  return p;
}

/**
 * SearchPanel binds the search form and its result list to a Client.
 * onOpen(conversationID, seq) opens a result; the view scrolls to it.
 */
export class SearchPanel {
  constructor(client, { signal, onOpen }) {
    this.client = client;
    this.onOpen = onOpen;
    this.results = [];
    this.nextCursor = '';
    this.query = null;
    this.serial = 0;
    const opts = { signal };
    $('search-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.run();
    }, opts);
    $('search-input').addEventListener('keydown', (e) => {
      if (e.key === 'Escape') this.clear();
    }, opts);
    $('search-clear').addEventListener('click', () => this.clear(), opts);
    $('search-more').addEventListener('click', () => this.more(), opts);
    $('search-results').addEventListener('click', (e) => {
      const btn = e.target.closest('button[data-conv-id]');
      if (btn) this.onOpen(btn.dataset.convId, Number(btn.dataset.seq));
    }, opts);
  }

  /** update shows the "in this conversation" choice only while one is open. */
  update() {
    const conv = this.client.current;
    const scope = $('search-scope-row');
    scope.hidden = !conv;
    if (!conv) $('search-scope').checked = false;
  }

  /** run starts a new search with the form's keyword and scope. */
  async run() {
    const keyword = $('search-input').value.trim();
    if (!keyword) return this.clear();
    const conv = $('search-scope').checked && this.client.current ? this.client.current.id : '';
    this.query = { keyword, conversation_id: conv || undefined, limit: SEARCH_LIMIT };
    this.results = [];
    this.nextCursor = '';
    return this.fetch('');
  }

  async more() {
    if (this.query && this.nextCursor) await this.fetch(this.nextCursor);
  }

  async fetch(cursor) {
    const serial = ++this.serial;
    this.status('Searching…');
    try {
      const res = await this.client.search({ ...this.query, cursor: cursor || undefined });
      if (serial !== this.serial) return; // a newer search replaced this one
      this.results = this.results.concat(res.results || []);
      this.nextCursor = res.next_cursor || '';
      this.status(this.results.length ? '' : 'No messages found.');
    } catch (err) {
      if (serial !== this.serial) return;
      this.status(this.errorText(err));
    }
    this.render();
  }

  errorText(err) {
    switch (err.reason) {
      case 'bad_request': return 'Type at least 3 letters (2 for Chinese, Japanese or Korean), at most 64.';
      case 'too_many_requests': return 'Too many searches: wait a moment.';
      case 'search_timeout': return 'The search took too long: try a longer keyword.';
      default: return `Search failed: ${err.message}`;
    }
  }

  clear() {
    this.serial++;
    this.query = null;
    this.results = [];
    this.nextCursor = '';
    $('search-input').value = '';
    this.status('');
    this.render();
  }

  status(text) {
    $('search-status').textContent = text;
  }

  render() {
    const c = this.client;
    const list = $('search-results');
    list.replaceChildren(...this.results.map((r) => {
      const conv = c.conv(r.conversation_id);
      const hl = r.highlight || {};
      const text = matchedText(r, hl.field);
      const who = r.sender_id === c.me ? 'You' : c.nameOf(r.sender_id);
      return el('li', {},
        el('button', { type: 'button', class: 'result', 'data-conv-id': r.conversation_id, 'data-seq': String(r.seq) },
          el('span', { class: 'result-head' },
            el('span', { class: 'result-conv', text: c.title(conv) }), ' ',
            el('time', { text: timeOf(r.send_at) })),
          el('span', { class: 'result-sender', text: `${who}:` }),
          highlighted(text, hl.ranges)));
    }));
    $('search-clear').hidden = !this.query;
    $('search-more').hidden = !this.nextCursor;
  }
}
