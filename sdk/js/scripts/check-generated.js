// check-generated fails (exit 1) when a generated file is out of date:
// types/*.d.ts (tsc from the JSDoc of src/; `npm run types` rewrites them)
// and the API reference in docs/sdk.md (`node scripts/apiref.js --write`).

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { docPath, reference, splice } from './apiref.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let stale = 0;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nexo-sdk-types-'));
try {
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.types.json', '--declarationDir', tmp], { cwd: root, stdio: 'inherit' });
  const want = fs.readdirSync(tmp).sort();
  const have = fs.existsSync(path.join(root, 'types')) ? fs.readdirSync(path.join(root, 'types')).sort() : [];
  if (JSON.stringify(want) !== JSON.stringify(have)) {
    console.error(`types/: files ${JSON.stringify(have)}, want ${JSON.stringify(want)}: run npm run types`);
    stale++;
  } else {
    for (const f of want) {
      if (fs.readFileSync(path.join(tmp, f), 'utf8') !== fs.readFileSync(path.join(root, 'types', f), 'utf8')) {
        console.error(`types/${f} is out of date: run npm run types`);
        stale++;
      }
    }
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}

const docText = fs.readFileSync(docPath, 'utf8');
if (splice(docText, reference()) !== docText) {
  console.error('docs/sdk.md: the API reference is out of date: run node scripts/apiref.js --write');
  stale++;
}
if (stale) process.exit(1);
console.log('generated files are up to date');
