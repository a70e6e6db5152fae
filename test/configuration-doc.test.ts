import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { configSchema as gateway } from '../services/api-gateway/src/config';
import { configSchema as signals } from '../services/signals/src/config';
import { configSchema as stats } from '../services/stats/src/config';
import { configSchema as webhooks } from '../services/webhooks/src/config';
import { OUTPUT, render } from '../scripts/configuration-doc.js';

/** docs/configuration.md is generated from the services' config schemas (scripts/configuration-doc.js). */
const schemas = { 'api-gateway': gateway, signals, stats, webhooks };

describe('configuration document', () => {
  it('when rendered from the schemas in source, then it equals the committed docs/configuration.md', () => {
    const { text } = render(schemas);
    // On failure: pnpm run -s build && node scripts/configuration-doc.js
    expect(readFileSync(OUTPUT, 'utf8')).toBe(text);
  });

  it('when rendered, then every variable of every schema has a row and a meaning', () => {
    const { text, missing } = render(schemas);
    expect(missing).toEqual([]);
    const table = text.slice(0, text.indexOf('## Read outside these schemas'));
    const rows = new Set([...table.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1] ?? ''));
    const variables = new Set(Object.values(schemas).flatMap((s) => Object.keys(s.shape)));
    expect([...variables].filter((v) => !rows.has(v))).toEqual([]);
    expect([...rows].filter((v) => !variables.has(v))).toEqual([]);
  });

  it('when a schema gains a variable, then the document no longer matches', () => {
    const grown = { ...schemas, stats: stats.extend({ STATS_NEW_SETTING: z.string().default('x') }) };
    const { text, missing } = render(grown);
    expect(text).not.toBe(readFileSync(OUTPUT, 'utf8'));
    expect(missing).toEqual(['stats: STATS_NEW_SETTING']);
  });

  it('when a default changes, then its row shows the new one', () => {
    const changed = {
      ...schemas,
      signals: signals.extend({ OUTBOX_INTERVAL_MS: z.coerce.number().default(250) }),
    };
    expect(render(changed).text).toMatch(/^\| `OUTBOX_INTERVAL_MS` \| signals \| `250` \|/m);
  });
});
