#!/usr/bin/env node
// docs/configuration.md, generated from the services' zod config schemas (services/*/src/config.ts):
// every variable, the services that read it, its default, what it accepts and what it means (the
// schema's doc comment, or the shared meaning below for the variables every service has).
//
//   pnpm run -s build && node scripts/configuration-doc.js           # rewrites docs/configuration.md
//   node scripts/configuration-doc.js --check                         # exit 1 when the file is stale
//
// test/configuration-doc.test.ts renders the schemas from source and fails when the committed file
// differs, or when a variable has no meaning.
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const path = require('node:path');
const ts = require('typescript');
const { z } = require('zod');

const ROOT = path.join(__dirname, '..');
const OUTPUT = path.join(ROOT, 'docs/configuration.md');

/** The deployables with a config schema, in the order of the table's "services" column. */
const SERVICES = ['api-gateway', 'signals', 'stats', 'webhooks'];

/** Source files whose doc comments describe variables: each service's config and the shared parts. */
const SOURCES = [
  ...SERVICES.map((s) => `services/${s}/src/config.ts`),
  'packages/service-kit/src/metrics.ts',
];

/** Meanings of the variables whose schema entry carries no doc comment (mostly the shared ones). */
const MEANINGS = {
  NODE_ENV: '`production` refuses the settings that are for development and tests only',
  PORT: 'public HTTP port (the webhooks worker reads `WORKER_PORT`, 4004, for its health port)',
  HOST: 'bind address (`0.0.0.0` in containers)',
  LOG_LEVEL: 'pino log level',
  METRICS_HOST: 'address of the internal metrics port (`0.0.0.0` in pods, where Prometheus scrapes it)',
  MONGO_URL:
    'MongoDB (or FerretDB) connection string; seed lists (`mongodb://a:27017,b:27017/db?replicaSet=rs0`) and `mongodb+srv://` accepted',
  GATEWAY_DB: "the gateway's database (accounts, keys)",
  SIGNALS_DB: "the signals service's database (signals and their outbox)",
  STATS_DB: "the stats service's database (the projection)",
  WEBHOOKS_DB: "the webhooks service's database (subscriptions, deliveries, the delivery log)",
  REDIS_URL:
    'Redis: `redis://`, `rediss://`, a Unix socket `unix:///path/redis.sock[?db=N]`, Sentinel `redis-sentinel://h1:26379,h2:26379/masterName[/db]`, or a Cluster `redis-cluster://h1:6379,h2:6379` (`rediss-cluster://` for TLS)',
  REDIS_PREFIX:
    "prefix of every Redis key (`local:` in the local run); the operator CLI must use the gateway's, or its revocations and plan changes do not apply at once",
  AMQP_URL: 'RabbitMQ; several brokers as a comma-separated list, tried in turn on connect and reconnect',
  AMQP_PREFIX: 'prefix of every exchange and queue name',
  AMQP_QUEUE_TYPE: 'type of the consumer queues',
  INTERNAL_JWT_PUBLIC_KEY:
    "the public half of the gateway's signing key (SPKI PEM or base64 DER): checks service tokens, cannot make them",
  SESSION_JWT_SECRET: 'HMAC key of session tokens (must differ from `API_KEY_PEPPER`)',
  SESSION_TTL_SECONDS: 'lifetime of a session (login and dashboard)',
  SIGNALS_URL: 'the signals service (the stats rebuild command reads its export there)',
  STATS_URL: 'the stats service',
  WEBHOOKS_URL: 'the webhooks API',
  UPSTREAM_TIMEOUT_MS: "a service's response headers and body must arrive within this, else 504",
  DEFAULT_PLAN_PER_MINUTE:
    'requests per minute of the plan new accounts get (also what `/openapi.json` states)',
  DEFAULT_PLAN_PER_DAY: 'requests per day of that plan; below the minute is refused',
  SIGNUPS_PER_ADDRESS_PER_DAY: 'sign-up attempts per client address and day',
  TRUST_PROXY: 'trust-proxy setting (the client address behind a load balancer), as Express reads it',
  PUBLIC_URL: "server URL in the OpenAPI document (default: the request's own origin)",
  OUTBOX_INTERVAL_MS: 'relay tick for written signals (writes also nudge it)',
  WEBHOOK_WRITE_BATCH: '…or as soon as this many records wait (see `WEBHOOK_WRITE_WINDOW_MS`)',
  WEBHOOK_TIMEOUT_MS: 'a receiver must respond with a 2xx within this',
  WEBHOOK_MAX_RESPONSE_BYTES: "bytes of a receiver's response body read at most",
  INGEST_TOKEN: 'credential of the ingest API (stats: for the rebuild command)',
};

/** A variable's doc comment in `file`, per variable name: the first paragraph, on one line. */
function docComments(file) {
  const source = ts.createSourceFile(
    file,
    readFileSync(path.join(ROOT, file), 'utf8'),
    ts.ScriptTarget.Latest,
    true,
  );
  const out = {};
  const visit = (node) => {
    if (
      ts.isPropertyAssignment(node) &&
      ts.isIdentifier(node.name) &&
      /^[A-Z][A-Z0-9_]+$/.test(node.name.text)
    ) {
      const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
      const text = docs.map((d) => ts.getTextOfJSDocComment(d.comment) ?? '').join(' ');
      if (text.trim()) out[node.name.text] ??= text.replace(/\s+/g, ' ').trim();
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** What a property of the input JSON Schema accepts, in words. */
function accepted(p) {
  if (p.enum) return p.enum.map((v) => `\`${v}\``).join(', ');
  const parts = [];
  if (p.type === 'integer' || p.type === 'number') {
    parts.push(p.type === 'integer' ? 'integer' : 'number');
    const max = p.maximum !== undefined && p.maximum < Number.MAX_SAFE_INTEGER ? p.maximum : undefined;
    if (p.minimum !== undefined && max !== undefined) parts[0] += ` ${p.minimum}–${max}`;
    else if (p.minimum !== undefined) parts[0] += ` ≥ ${p.minimum}`;
  } else if (p.pattern) parts.push(`\`${p.pattern}\``);
  else if (p.format === 'uri') parts.push('URL');
  else if (p.minLength) parts.push(`≥ ${p.minLength} characters`);
  else parts.push('string');
  return parts.join(' ');
}

/** The default as an operator writes it in the environment. */
function shownDefault(field, p) {
  const value = p.default !== undefined ? p.default : field.safeParse(undefined).data;
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return value.join(',');
  return String(value);
}

/**
 * The document for `schemas` ({ service: zod object schema }) and the variables without a meaning
 * (the test passes the schemas from source, the command line those from dist).
 */
function render(schemas) {
  const comments = Object.fromEntries(SOURCES.map((f) => [f, docComments(f)]));
  /** name → { services: [[service, default, required]], accepted, meaning } */
  const vars = new Map();
  const missing = [];
  for (const service of SERVICES) {
    const schema = schemas[service];
    const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
    const required = new Set(json.required ?? []);
    const own = comments[`services/${service}/src/config.ts`];
    for (const [name, p] of Object.entries(json.properties)) {
      const meaning =
        own[name] ??
        comments['packages/service-kit/src/metrics.ts'][name] ??
        MEANINGS[name] ??
        SOURCES.map((f) => comments[f][name]).find(Boolean);
      if (!meaning) missing.push(`${service}: ${name}`);
      const entry = vars.get(name) ?? { services: [], accepted: accepted(p), meaning };
      entry.services.push([service, shownDefault(schema.shape[name], p), required.has(name)]);
      vars.set(name, entry);
    }
  }
  const cell = (s) => String(s).replaceAll('|', '\\|');
  const rows = [...vars.entries()].map(([name, v]) => {
    const everyService = v.services.length === SERVICES.length;
    const names = everyService ? 'all' : v.services.map(([s]) => s).join(', ');
    const shown = ([, d, r]) =>
      r ? 'required' : d === undefined ? 'unset' : d === '' ? 'empty' : `\`${d}\``;
    const defaults = new Set(v.services.map(shown));
    const def =
      defaults.size === 1 ? [...defaults][0] : v.services.map((x) => `${shown(x)} (${x[0]})`).join(', ');
    return `| \`${name}\` | ${names} | ${cell(def)} | ${cell(v.accepted)} | ${cell(v.meaning ?? '')} |`;
  });
  const text = [
    '# Configuration',
    '',
    '<!-- Generated by scripts/configuration-doc.js from services/*/src/config.ts: do not edit by hand.',
    '     After changing a config schema: pnpm run -s build && node scripts/configuration-doc.js -->',
    '',
    'Every service parses its environment once at start-up with the zod schema in its',
    '`src/config.ts`; a bad value stops it with one line per variable, never a stack trace. Secrets',
    'have no defaults and are never logged. "required" means the service does not start without it.',
    '',
    '| variable | services | default | accepted | meaning |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    '## Read outside these schemas',
    '',
    '| variable | read by | meaning |',
    '|---|---|---|',
    '| `WORKER_PORT`, `WORKER_METRICS_PORT` | webhooks worker (`services/webhooks/src/worker.ts`) | its health port (4004) and metrics port (9404); the rest of its settings are the webhooks schema above |',
    '| `OTEL_EXPORTER_OTLP_ENDPOINT` and the standard `OTEL_*` | every service (`packages/telemetry`) | tracing: off unless an OTLP/HTTP endpoint is set |',
    '| `NODE_OPTIONS` | signals, stats; api-gateway (images and the run command) | `--max-semi-space-size=8`; `--max-semi-space-size=16`: see [benchmarks](benchmarks.md) |',
    '| `MONGO_PORT`, `FERRETDB_BACKEND`, `FERRETDB_PG_DB` | `infra/local/infra.sh` | the local MongoDB-wire server: port (27017), FerretDB backend (`postgresql` when PostgreSQL is reachable, else `sqlite`), its PostgreSQL database (`signal_ferretdb_` + a hash of the checkout for the tests, `signal_run_` + the hash for `scripts/up.sh`, `signal_bench_` + the hash for the benches) |',
    '',
    "The operator CLI (`pnpm admin`) reads the gateway's `MONGO_URL`, `GATEWAY_DB`, `REDIS_URL`,",
    '`REDIS_PREFIX`, `API_KEY_PEPPER` and default plan; see [operations](operations.md).',
    '',
  ].join('\n');
  return { text, missing };
}

module.exports = { render, OUTPUT, SERVICES };

if (require.main === module) {
  const schemas = Object.fromEntries(
    SERVICES.map((s) => [s, require(path.join(ROOT, `services/${s}/dist/config.js`)).configSchema]),
  );
  const { text, missing } = render(schemas);
  if (missing.length) {
    console.error(`no meaning for: ${missing.join(', ')} (add a doc comment to the schema entry)`);
    process.exit(1);
  }
  if (process.argv.includes('--check')) {
    const current = readFileSync(OUTPUT, 'utf8');
    if (current !== text) {
      console.error('docs/configuration.md is stale: run node scripts/configuration-doc.js');
      process.exit(1);
    }
  } else writeFileSync(OUTPUT, text);
}
