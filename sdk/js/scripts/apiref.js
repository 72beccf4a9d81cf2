// apiref prints the API reference of @nexo-im/client as Markdown, read
// from the JSDoc types of src/ with the TypeScript compiler: every public
// member of the exported classes and every property of the option, event
// and message types. docs/sdk.md carries its output between the markers
// <!-- apiref:start --> and <!-- apiref:end -->; check-generated.js fails
// when they differ (`node scripts/apiref.js --write` updates the doc).

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const docPath = path.resolve(root, '../../docs/sdk.md');

const CLASSES = ['NexoClient', 'OutgoingMessage', 'MemoryOutbox', 'IndexedDBOutbox', 'HttpApi', 'NexoError'];
const TYPES = ['NexoClientOptions', 'SendParams', 'SendResult', 'Message', 'PullResult', 'ClientEvents', 'ReceiptEvent', 'TypingEvent', 'RecallEvent', 'KickedEvent', 'OutboxRecord', 'Outbox'];

/** reference returns the Markdown reference. */
export function reference() {
  const program = ts.createProgram([path.join(root, 'src/index.js')], {
    allowJs: true, checkJs: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022,
    moduleResolution: ts.ModuleResolutionKind.Bundler, lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'], strict: true, types: [],
  });
  const checker = program.getTypeChecker();
  const flat = (s) => s.replace(/\s+/g, ' ').trim();
  const doc = (sym) => flat(ts.displayPartsToString(sym.getDocumentationComment(checker)));
  const cell = (s) => s.replace(/\|/g, '\\|');

  /** @type {Map<string, ts.Symbol>} */
  const classes = new Map();
  /** @type {Map<string, ts.Type>} */
  const types = new Map();
  for (const sf of program.getSourceFiles()) {
    if (!sf.fileName.startsWith(path.join(root, 'src'))) continue;
    ts.forEachChild(sf, (node) => {
      if (ts.isClassDeclaration(node) && node.name && CLASSES.includes(node.name.text)) {
        classes.set(node.name.text, checker.getSymbolAtLocation(node.name));
      }
    });
    for (const tag of collectTypedefs(sf)) {
      if (TYPES.includes(tag.name.getText()) && !types.has(tag.name.getText())) types.set(tag.name.getText(), checker.getTypeAtLocation(tag.name));
    }
  }

  const out = ['## API reference', '', 'Generated from the JSDoc types of `sdk/js/src` by `sdk/js/scripts/apiref.js`; do not edit by hand.', ''];
  for (const name of CLASSES) {
    const sym = classes.get(name);
    if (!sym) throw new Error(`apiref: class ${name} not found`);
    out.push(`### class ${name}`, '');
    if (doc(sym)) out.push(doc(sym), '');
    const decl = /** @type {ts.ClassDeclaration} */ (sym.valueDeclaration);
    const ctor = decl.members.find(ts.isConstructorDeclaration);
    if (ctor) {
      const sig = checker.getSignatureFromDeclaration(ctor);
      out.push(`- \`new ${name}${flat(checker.signatureToString(sig))}\``);
    }
    const instance = checker.getDeclaredTypeOfSymbol(sym);
    const members = checker.getPropertiesOfType(instance).filter((m) => !m.name.startsWith('_') && m.valueDeclaration && m.valueDeclaration.getSourceFile().fileName.includes(`${path.sep}src${path.sep}`));
    const inherited = new Set(['on', 'off', 'emit', 'onListenerError']);
    for (const m of members) {
      if (name !== 'NexoClient' && name !== 'OutgoingMessage' ? false : inherited.has(m.name) && m.valueDeclaration.getSourceFile().fileName.endsWith('emitter.js')) continue;
      const t = checker.getTypeOfSymbolAtLocation(m, decl);
      const sigs = t.getCallSignatures();
      const isMethod = m.valueDeclaration && ts.isMethodDeclaration(m.valueDeclaration);
      if (!isMethod && !doc(m)) continue; // a field without a doc is internal
      const text = isMethod && sigs.length ? `${m.name}${flat(checker.signatureToString(sigs[0]))}` : `${m.name}: ${flat(checker.typeToString(t))}`;
      out.push(`- \`${text}\`${doc(m) ? ` — ${doc(m)}` : ''}`);
    }
    if (name === 'NexoClient' || name === 'OutgoingMessage') out.push(`- \`on(event, fn): () => void\`, \`off(event, fn)\` — events: ${name === 'NexoClient' ? 'see ClientEvents' : '`state` (the new SendState)'}`);
    out.push('');
  }
  for (const name of TYPES) {
    const t = types.get(name);
    if (!t) throw new Error(`apiref: type ${name} not found`);
    out.push(`### type ${name}`, '', '| property | type | meaning |', '| --- | --- | --- |');
    for (const p of checker.getPropertiesOfType(t)) {
      const decl = p.valueDeclaration || (p.declarations && p.declarations[0]);
      const pt = checker.getTypeOfSymbolAtLocation(p, decl);
      const optional = (p.flags & ts.SymbolFlags.Optional) !== 0;
      out.push(`| \`${p.name}${optional ? '?' : ''}\` | \`${cell(flat(checker.typeToString(pt, undefined, ts.TypeFormatFlags.NoTruncation)))}\` | ${cell(doc(p))} |`);
    }
    out.push('');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/** @param {ts.SourceFile} sf @returns {ts.JSDocTypedefTag[]} */
function collectTypedefs(sf) {
  /** @type {ts.JSDocTypedefTag[]} */
  const tags = [];
  const visit = (/** @type {ts.Node} */ node) => {
    for (const d of /** @type {any} */ (node).jsDoc || []) {
      for (const tag of d.tags || []) if (ts.isJSDocTypedefTag(tag) && tag.name) tags.push(tag);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  // Typedefs at the end of a file hang on the end-of-file token.
  for (const d of /** @type {any} */ (sf.endOfFileToken).jsDoc || []) {
    for (const tag of d.tags || []) if (ts.isJSDocTypedefTag(tag) && tag.name) tags.push(tag);
  }
  return tags;
}

const START = '<!-- apiref:start -->';
const END = '<!-- apiref:end -->';

/** splice returns doc with the text between the markers replaced by ref. */
export function splice(docText, ref) {
  const a = docText.indexOf(START);
  const b = docText.indexOf(END);
  if (a < 0 || b < a) throw new Error(`apiref: ${docPath} lacks the ${START} … ${END} markers`);
  return `${docText.slice(0, a + START.length)}\n${ref}${docText.slice(b)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const ref = reference();
  if (process.argv.includes('--write')) {
    fs.writeFileSync(docPath, splice(fs.readFileSync(docPath, 'utf8'), ref));
  } else {
    process.stdout.write(ref);
  }
}
