import { ROUTE_LIST, errorEnvelopeSchema } from '@signal/contracts';
import fc from 'fast-check';
import path from 'node:path';
import { waitFor } from '@signal/test-kit';
import { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { startSystem, type SystemHarness } from '../services/api-gateway/test/system-harness';
import { signalInput } from '../services/signals/test/signals-harness';

/**
 * Property-based fuzzing of the whole running system through the gateway:
 * generated requests — odd paths and %-escapes, parameters, headers, methods, bodies up to ~2 MB,
 * deep and mislabelled JSON — go out in batches that are all in flight at once. Every request must
 * get a response (a hang shows as no response within NO_RESPONSE_AFTER_MS), below 500, with the error
 * envelope on every error and no stack or driver text;
 * writes that were refused must have changed nothing in any store.
 *
 * Reproduce a failure with FUZZ_SEED=<seed printed by fast-check>; FUZZ_RUNS sets the number of
 * batches.
 */

export const BATCH = 12; // requests in flight together
export const RUNS = Number(process.env.FUZZ_RUNS ?? 150); // 150 × 12 = 1,800 requests a run (a new seed each run)
/** A request with no response after this is a hang (a bound on hangs, not on response times). */
export const NO_RESPONSE_AFTER_MS = 30_000;

/** The route table's path parameters as the fuzz's placeholders: the seeded ids each draws from. */
export const PARAM_IDS: Record<string, string> = {
  signal_id: '{s}',
  webhook_id: '{w}',
  delivery_id: '{d}',
  key_id: '{k}',
};
export const ARTIFACTS = path.join(__dirname, '..', '.run', 'artifacts');

/** Text that must never reach a client: stack frames, source paths, driver and library errors. */
export const LEAKS =
  /\n\s+at |\bat [\w.<>]+ \(|node_modules|\.[jt]s:\d+|Mongo[A-Z]\w*|MongoServer|E11000|BSON|mongoose|Cast to \w+ failed|ioredis|ReplyError|ECONNREFUSED|ECONNRESET|EPIPE|amqplib|UND_ERR|undici|ZodError|TypeError|RangeError|ReferenceError|SyntaxError/;

export type BodySpec =
  | { kind: 'none' }
  | { kind: 'text'; text: string }
  | { kind: 'deep'; depth: number; open: string; close: string }
  | { kind: 'big'; bytes: number; fill: 'json-string' | 'json-array' | 'garbage' }
  | { kind: 'binary'; bytes: number[] };

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: BodySpec;
}

export interface Seeded {
  keys: string[];
  junkKey: string;
  sessionToken: string;
  dashboardCookie: string;
  csrf: string;
  emails: string[];
  signalIds: string[];
  webhookIds: string[];
  deliveryIds: string[];
  keyIds: string[];
  receiverUrl: string;
  origin: string;
}

export function bodyBytes(spec: BodySpec): Buffer | undefined {
  switch (spec.kind) {
    case 'none':
      return undefined;
    case 'text':
      return Buffer.from(spec.text, 'utf8');
    case 'deep':
      return Buffer.from(spec.open.repeat(spec.depth) + spec.close.repeat(spec.depth));
    case 'binary':
      return Buffer.from(spec.bytes);
    case 'big':
      if (spec.fill === 'json-string') return Buffer.from(`{"name":"${'a'.repeat(spec.bytes)}"}`);
      if (spec.fill === 'json-array') return Buffer.from(`[${'1,'.repeat(spec.bytes / 2)}1]`);
      return Buffer.alloc(spec.bytes, 0x7b);
  }
}

export function describe_(r: FuzzRequest): string {
  const b = r.body;
  const body =
    b.kind === 'text'
      ? JSON.stringify(b.text.slice(0, 200))
      : b.kind === 'deep'
        ? `deep ${b.open}×${b.depth}`
        : b.kind === 'big'
          ? `${b.fill} ${b.bytes} B`
          : b.kind;
  return `${r.method} ${r.path.slice(0, 300)} headers=${JSON.stringify(r.headers).slice(0, 400)} body=${body}`;
}

export function arbitraries(s: Seeded) {
  const oddEscape = fc.constantFrom(
    '%',
    '%Z',
    '%ZZ',
    '%zz',
    '%0',
    '%00',
    '%2F',
    '%2f',
    '%2e%2e',
    '%25',
    '%C0%AF',
    '%FF',
    '%E2%82',
    '%ED%A0%80',
    '%u0041',
    '..',
    '.',
    '',
    ';',
    '%3B',
    '%20',
    '+',
    '~',
    '*',
    '$',
    '%5Cx',
  );
  const word = fc.stringMatching(/^[a-z0-9_-]{1,12}$/);
  const ulidish = fc.stringMatching(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  const segment = fc.oneof(
    { weight: 3, arbitrary: word },
    { weight: 3, arbitrary: oddEscape },
    { weight: 2, arbitrary: fc.constantFrom(...s.signalIds, ...s.webhookIds, ...s.deliveryIds, ...s.keyIds) },
    { weight: 1, arbitrary: ulidish.map((u) => `sig_${u}`) },
    { weight: 1, arbitrary: ulidish.map((u) => `wh_${u}`) },
    { weight: 1, arbitrary: ulidish.map((u) => `dlv_${u}`) },
    { weight: 1, arbitrary: fc.tuple(word, oddEscape, word).map(([a, e, b]) => `${a}${e}${b}`) },
    { weight: 1, arbitrary: fc.integer({ min: 300, max: 6000 }).map((n) => 'x'.repeat(n)) },
    // Raw bytes HTTP allows in a request target but URLs do not (the parser sees them as-is).
    { weight: 1, arbitrary: fc.stringMatching(/^[\x21-\x7e]{1,8}$/).map((x) => x.replace(/[?#/]/g, '')) },
  );
  /**
   * Every route with the method it serves; the fuzz also crosses them with any other method. The
   * public API's come from the route table, each path parameter as the kind of seeded id it takes.
   */
  const ROUTES: Array<[string, string]> = [
    ...ROUTE_LIST.map((r): [string, string] => [
      r.method.toUpperCase(),
      r.path.replace(/\{([a-z_]+)\}/g, (_, name: string) => PARAM_IDS[name] ?? '{x}'),
    ]),
    // The gateway's own pages and the dashboard's API, which the public table does not hold.
    ['GET', '/v1/dashboard/session'],
    ['POST', '/v1/dashboard/session'],
    ['POST', '/v1/dashboard/signup'],
    ['GET', '/v1/dashboard/keys'],
    ['POST', '/v1/dashboard/keys'],
    ['POST', '/v1/dashboard/keys/{k}/roll'],
    ['DELETE', '/v1/dashboard/keys/{k}'],
    ['GET', '/v1/dashboard/usage'],
    ['GET', '/docs'],
    ['GET', '/openapi.json'],
    ['GET', '/dashboard'],
    ['GET', '/healthz'],
    ['GET', '/readyz'],
  ];
  const NOWHERE = [
    '/v1/{x}',
    '/{x}',
    '/{x}/{x}/{x}',
    '/docs/assets/{x}',
    '/dashboard/assets/{x}',
    '/internal/signals',
    '/v2/signals',
  ];
  const template = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ROUTES.map(([, t]) => t)) },
    { weight: 1, arbitrary: fc.constantFrom(...NOWHERE) },
  );
  const pathArb = fc
    .record({
      template,
      segments: fc.array(fc.tuple(segment, fc.nat(), fc.integer({ min: 0, max: 2 })), {
        minLength: 3,
        maxLength: 3,
      }),
      decoration: fc.constantFrom('', '', '', '', '', '/', '//', '/.'),
    })
    .map(({ template: t, segments, decoration }) => {
      let i = 0;
      const p = t.replace(/\{[swdkx]\}/g, (m) => {
        const [seg, pick, useSeed] = segments[i++]!;
        if (m === '{x}' || useSeed === 0) return seg;
        // Two times in three the kind of id the route expects, from the seeded data.
        const ids =
          m === '{s}' ? s.signalIds : m === '{w}' ? s.webhookIds : m === '{d}' ? s.deliveryIds : s.keyIds;
        return ids[pick % ids.length]!;
      });
      return decoration === '//' ? `/${p}` : p + decoration;
    });

  const paramName = fc.oneof(
    fc.constantFrom('type', 'status', 'since', 'limit', 'page', 'cursor', 'period', 'event', 'key_id'),
    word,
    fc.constantFrom('__proto__', 'constructor', 'a[b]', 'type[]', 'limit[$gt]', '%ZZ', ''),
  );
  const paramValue = fc.oneof(
    fc.constantFrom('new', '3d', 'premium', 'active', 'winner', '24h', 'all', 'signal.new', 'succeeded'),
    fc.constantFrom('0', '-1', '1', '100', '101', '1e400', 'NaN', '-0', '0x10', ' 5', '92233720368547759'),
    fc.constantFrom('2024-01-01T00:00:00Z', '2999-01-01T00:00:00Z', 'yesterday', '0000-00-00T00:00:00Z'),
    fc.integer().map(String),
    word,
    oddEscape,
    fc.constantFrom(...s.keyIds, ...s.signalIds),
    fc.integer({ min: 200, max: 9000 }).map((n) => 'q'.repeat(n)),
  );
  const queryArb = fc
    .array(fc.tuple(paramName, paramValue, fc.boolean()), { maxLength: 5 })
    .map((pairs) =>
      pairs.length === 0
        ? ''
        : `?${pairs.map(([k, v, bare]) => (bare && v === '' ? k : `${k}=${v}`)).join('&')}`,
    );

  const method = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE') },
    { weight: 2, arbitrary: fc.constantFrom('PUT', 'HEAD', 'OPTIONS') },
    { weight: 1, arbitrary: fc.constantFrom('PROPFIND', 'PURGE', 'MKCOL', 'FOO', 'LOCK', 'SEARCH') },
  );
  const authorization = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...s.keys.map((k) => `Bearer ${k}`)) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        `Bearer ${s.junkKey}`,
        `Bearer ${s.sessionToken}`,
        'Bearer',
        'Bearer ',
        'bearer sk_live_x',
        'Basic dXNlcjpwYXNz',
        `Bearer ${s.keys[0]!} extra`,
        `Bearer ${s.keys[0]!.slice(0, -1)}`,
        `${s.keys[0]!}`,
        'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
      ),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
  const contentType = fc.oneof(
    { weight: 4, arbitrary: fc.constant('application/json') },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        'application/json; charset=utf-16',
        'application/json; charset=latin1',
        'application/json; charset=bogus',
        'application/merge-patch+json',
        'application/vnd.x+json',
        'text/plain',
        'text/html',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=zz',
        'application/octet-stream',
        'json',
        '*/*',
        ';;;',
        'application/json, text/plain',
      ),
    },
    { weight: 2, arbitrary: fc.constant(undefined) },
  );
  /** Present one time in `1 + rarity`. */
  const sometimes = <T>(arb: fc.Arbitrary<T>, rarity = 4) =>
    fc.oneof({ weight: rarity, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
  const headersArb = fc
    .record({
      authorization,
      'content-type': contentType,
      accept: sometimes(fc.constantFrom('application/json', '*/*', 'text/html', 'application/xml', '')),
      'content-encoding': sometimes(fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'x-unknown'), 8),
      'idempotency-key': sometimes(fc.oneof(word, fc.constantFrom('', ' ', 'k'.repeat(300), 'é'))),
      'x-request-id': sometimes(fc.oneof(word, fc.constantFrom('a b', '%ZZ', 'r'.repeat(200)))),
      cookie: sometimes(fc.constantFrom(s.dashboardCookie, '__Host-signal_session=junk', 'a=b; c', '=;=;')),
      'x-csrf-token': sometimes(fc.constantFrom(s.csrf, 'nope'), 2),
      origin: sometimes(fc.constantFrom(s.origin, 'https://evil.example', 'null'), 2),
      'x-forwarded-for': sometimes(fc.constantFrom('1.2.3.4', 'garbage', '::1, 10.0.0.1'), 8),
      range: sometimes(fc.constantFrom('bytes=0-10', 'bytes=999999-', 'nonsense'), 8),
      'if-none-match': sometimes(fc.constantFrom('*', '"x"'), 8),
      'if-match': sometimes(fc.constantFrom('"nope"', '*'), 8),
      'transfer-encoding': sometimes(fc.constant('chunked'), 12),
    })
    .map((h) => {
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(h)) if (typeof v === 'string') out[k] = v;
      return out;
    });

  // Bodies that would be valid for some route, so the fuzz also reaches past validation.
  // Callback URLs are loopback or unresolvable only: never a public host.
  const safeUrl = fc.constantFrom(
    `${s.receiverUrl}/fuzz`,
    'https://127.0.0.1:1/x',
    'http://10.0.0.1/x',
    'https://169.254.169.254/latest',
    'https://fuzz.invalid/hook',
    'https://localhost/x',
    'ftp://127.0.0.1/x',
    'javascript:alert(1)',
    'not a url',
    '',
  );
  const eventName = fc.constantFrom('signal.new', 'signal.winner', 'signal.dead', 'signal.updated', 'x', '');
  const typeName = fc.constantFrom('new', '3d', '7d', 'premium', 'nope', '');
  const validish = fc.oneof(
    fc.record(
      {
        url: safeUrl,
        events: fc.array(eventName, { maxLength: 4 }),
        types: fc.option(fc.array(typeName, { maxLength: 3 })),
        enabled: fc.boolean(),
        extra: fc.anything(),
      },
      { requiredKeys: [] },
    ),
    fc.record(
      { email: fc.constantFrom(...s.emails, 'x@y', 'nobody@example.com', ''), password: word, name: word },
      { requiredKeys: [] },
    ),
    fc.record(
      {
        name: fc.oneof(word, fc.constant('k'.repeat(500))),
        expires_at: fc.constantFrom('2000-01-01T00:00:00Z', '2999-01-01T00:00:00Z', 'soon', 5),
        overlap_seconds: fc.constantFrom(0, 3600, -1, 1e12, 'x'),
      },
      { requiredKeys: [] },
    ),
  );
  const textBody = fc.oneof(
    { weight: 4, arbitrary: validish.map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 3, arbitrary: fc.json({ depthSize: 'medium' }) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '{"__proto__":{"admin":true},"url":"x"}',
        '{"constructor":{"prototype":{"x":1}}}',
        '{"events":["signal.new"],"url":"https://127.0.0.1:1/","events":[]}',
        '{"a":1e999}',
        '{"a":-0}',
        '{"a":"\\ud800"}',
        '{"a":"\\u0000"}',
        '{"url":{"$gt":""},"events":{"$ne":null}}',
        '{',
        '{"a":',
        '[]',
        '""',
        'null',
        'true',
        '1',
        '   ',
        '\ufeff{}',
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 200, unit: 'binary' }) },
  );
  const bodyArb: fc.Arbitrary<BodySpec> = fc.oneof(
    { weight: 5, arbitrary: fc.constant<BodySpec>({ kind: 'none' }) },
    { weight: 10, arbitrary: textBody.map((text): BodySpec => ({ kind: 'text', text })) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom(10, 100, 1000, 5000, 20_000, 100_000),
          fc.constantFrom(['[', ']'], ['{"a":', '}'], ['{"url":[', ']}']),
        )
        .map(([depth, [open, close]]): BodySpec => ({ kind: 'deep', depth, open: open!, close: close! })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom(17 * 1024, 65 * 1024, 101 * 1024, 600 * 1024, 1024 * 1024, 2 * 1024 * 1024),
          fc.constantFrom('json-string' as const, 'json-array' as const, 'garbage' as const),
        )
        .map(([bytes, fill]): BodySpec => ({ kind: 'big', bytes, fill })),
    },
    {
      weight: 1,
      arbitrary: fc
        .array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 64 })
        .map((bytes): BodySpec => ({ kind: 'binary', bytes })),
    },
  );

  return fc
    .record({
      method,
      path: pathArb,
      query: queryArb,
      headers: headersArb,
      body: bodyArb,
      // Most requests use the route's own method, so they get past routing.
      ownMethod: fc.boolean(),
    })
    .map(({ method: m, path, query, headers, body, ownMethod }): FuzzRequest => {
      const own = ROUTES.find(([, t]) => new RegExp(`^${t.replace(/\{\w\}/g, '[^/]+')}$`).test(path));
      return { method: ownMethod && own ? own[0] : m, path: path + query, headers, body };
    });
}

export interface Outcome {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  ms: number;
}

export async function send(agent: Agent, origin: string, r: FuzzRequest): Promise<Outcome> {
  const started = performance.now();
  const bytes = bodyBytes(r.body);
  // undici frames the body itself: chunked when it is a stream, so the header asks for a stream.
  const { 'transfer-encoding': chunked, ...headers } = r.headers;
  const body =
    chunked && bytes
      ? Readable.from(
          Array.from({ length: Math.ceil(bytes.length / 65_536) }, (_, n) =>
            bytes.subarray(n * 65_536, (n + 1) * 65_536),
          ),
        )
      : bytes;
  const res = await request(`${origin}${r.path}`, {
    dispatcher: agent,
    method: r.method,
    headers,
    body,
    headersTimeout: NO_RESPONSE_AFTER_MS,
    bodyTimeout: NO_RESPONSE_AFTER_MS,
    signal: AbortSignal.timeout(NO_RESPONSE_AFTER_MS + 500),
  });
  // A live stream that opened never ends by itself: its status and headers are the response.
  if (res.statusCode === 200 && String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
    // Destroying the body aborts it, which it reports as an error: expected here, not a failure.
    res.body.once('error', () => undefined).destroy();
    return { status: res.statusCode, headers: res.headers, text: '', ms: performance.now() - started };
  }
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, ms: performance.now() - started };
}

/** What is wrong with one response (empty when nothing is). */
export function problems(r: FuzzRequest, o: Outcome): string[] {
  const found: string[] = [];
  if (o.status >= 500) found.push(`status ${o.status}`);
  if (o.status >= 400 && r.method !== 'HEAD') {
    // Only error responses: documents, pages and delivery logs (a receiver's ECONNREFUSED) may name these words.
    if (LEAKS.test(o.text)) found.push(`leaks internals: ${o.text.slice(0, 300)}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(o.text);
    } catch {
      found.push(`error body is not JSON: ${JSON.stringify(o.text.slice(0, 200))}`);
    }
    if (parsed !== undefined) {
      const envelope = errorEnvelopeSchema.safeParse(parsed);
      if (!envelope.success) found.push(`not the error envelope: ${o.text.slice(0, 300)}`);
      else if (envelope.data.error.request_id !== o.headers['x-request-id'])
        found.push(`error.request_id ≠ X-Request-Id (${envelope.data.error.request_id})`);
      if (o.status === 429 && !o.headers['retry-after']) found.push('429 without Retry-After');
    }
    if (!String(o.headers['content-type'] ?? '').startsWith('application/json'))
      found.push(`error content-type ${String(o.headers['content-type'])}`);
  }
  return found;
}

/**
 * The setup of a fuzz test file (the files run apart, each on a worker of its own): the whole
 * system under `label` with seeded accounts, keys, webhooks, deliveries and signals, and a
 * session and a dashboard cookie. Call inside the file's describe: it registers its beforeAll
 * and afterAll.
 */
export function fuzzSuite(label: string) {
  let sys: SystemHarness;
  let seeded: Seeded;
  let agent: Agent;

  beforeAll(async () => {
    sys = await startSystem(label, { IP_RATE_LIMIT_PER_MINUTE: '1000000' });
    agent = new Agent({ connections: BATCH * 2, keepAliveTimeout: 10_000 });
    const big = { per_minute: 10_000_000, per_day: 100_000_000 };
    const a = await sys.gw.account(big, 'fuzz-password-a');
    const b = await sys.gw.account(big, 'fuzz-password-b');
    const tiny = await sys.gw.account({ per_minute: 3, per_day: 5 });
    const post = async (path: string, auth: string, payload: unknown, extra: Record<string, string> = {}) => {
      const res = await request(`${sys.gw.url}${path}`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json', ...extra },
        body: JSON.stringify(payload),
      });
      const json = (await res.body.json()) as { data: Record<string, unknown> };
      if (res.statusCode >= 300) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(json)}`);
      return { json: json.data, headers: res.headers };
    };
    const webhookIds: string[] = [];
    const deliveryIds: string[] = [];
    for (const account of [a, b]) {
      for (let i = 0; i < 3; i++) {
        const hook = await post('/v1/webhooks', `Bearer ${account.key}`, {
          url: `${sys.receiver.url}/seed${i}`,
          events: ['signal.new'],
        });
        webhookIds.push(String(hook.json.id));
        const test = await post(`/v1/webhooks/${String(hook.json.id)}/test`, `Bearer ${account.key}`, {});
        deliveryIds.push(String(test.json.id));
      }
    }
    const signalIds: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await request(`${sys.signals.url}/internal/signals`, {
        method: 'POST',
        headers: { ...sys.signals.ingestAuth, 'content-type': 'application/json' },
        body: JSON.stringify(signalInput({ type: i % 2 ? 'premium' : 'new' })),
      });
      signalIds.push(((await res.body.json()) as { data: { id: string } }).data.id);
    }
    // The relay empties each signal's outbox shortly after the write: wait, so the store stands still.
    await waitFor(
      async () =>
        (await sys.signals.deps.mongo.collection('signals').countDocuments({ has_outbox: true })) === 0,
      10_000,
      50,
      'the outbox to drain',
    );
    const login = await post('/v1/auth/login', '', { email: a.email, password: 'fuzz-password-a' });
    const origin = sys.gw.url;
    const dash = await request(`${sys.gw.url}/v1/dashboard/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin },
      body: JSON.stringify({ email: b.email, password: 'fuzz-password-b' }),
    });
    const dashJson = (await dash.body.json()) as { data: { csrf_token: string } };
    const setCookie = String(dash.headers['set-cookie'] ?? '').split(';')[0]!;
    seeded = {
      keys: [a.key, b.key, tiny.key],
      junkKey: `sk_live_${'A'.repeat(43)}abcdef`,
      sessionToken: String(login.json.token),
      dashboardCookie: setCookie,
      csrf: dashJson.data.csrf_token,
      emails: [a.email, b.email],
      signalIds,
      webhookIds,
      deliveryIds,
      keyIds: [a.keyId, b.keyId, tiny.keyId],
      receiverUrl: sys.receiver.url,
      origin,
    };
  });

  afterAll(async () => {
    await agent?.close();
    await sys?.stop();
  });

  /** Everything a write could change, by store. */
  async function storeState() {
    const sorted = async (conn: typeof sys.gw.deps.mongo, name: string, omit: string[] = []) => {
      const docs = await conn.collection(name).find({}).sort({ _id: 1 }).toArray();
      return docs.map((d) =>
        JSON.stringify(Object.fromEntries(Object.entries(d).filter(([k]) => !omit.includes(k)))),
      );
    };
    return {
      signals: await sorted(sys.signals.deps.mongo, 'signals'),
      indexed: await sys.signals.deps.index.size(),
      // health moves with every delivery attempt the worker records: not a write of the client's.
      subscriptions: await sorted(sys.hooks.deps.mongo, 'subscriptions', ['health']),
      accounts: await sorted(sys.gw.deps.mongo, 'accounts'),
      // last_used_at moves with every accepted request: not a write of the client's.
      keys: await sorted(sys.gw.deps.mongo, 'api_keys', ['last_used_at']),
    };
  }

  return {
    /** Valid once the suite's beforeAll ran. */
    started: () => ({ sys, seeded, agent }),
    storeState,
  };
}
