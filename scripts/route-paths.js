#!/usr/bin/env node
// The clients' copies of the route tables (packages/contracts/src/route-module.ts): every
// operation's method and path, for the TypeScript SDK, the dashboard's front end and the Python
// SDK, which cannot load @signal/contracts when they run.
//
//   pnpm run -s build && node scripts/route-paths.js     # rewrites the generated files
//   node scripts/route-paths.js --check                  # exit 1 when one is stale
'use strict';
const { readFileSync, writeFileSync, mkdirSync } = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const { generatedRouteModules } = require(path.join(ROOT, 'packages/contracts/dist'));

let stale = false;
for (const { file, text } of generatedRouteModules()) {
  const target = path.join(ROOT, file);
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(target, 'utf8');
    } catch {}
    if (current !== text) {
      console.error(`${file} is stale: run node scripts/route-paths.js`);
      stale = true;
    }
  } else {
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, text);
  }
}
if (stale) process.exit(1);
