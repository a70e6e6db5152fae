import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import { ROUTES, buildOpenApiDocument } from '../src';

/** The parts of the document these checks read, checked rather than assumed. */
const schemaObject = z.record(z.string(), z.unknown());
const mediaSchema = z.object({ schema: schemaObject, example: z.unknown().optional() });
const responseSchema = z.object({ content: z.record(z.string(), mediaSchema).optional() });
const operationSchema = z.object({
  operationId: z.string(),
  parameters: z.array(z.object({ name: z.string(), in: z.string() })).optional(),
  requestBody: z.object({ content: z.object({ 'application/json': mediaSchema }) }).optional(),
  responses: z.record(z.string(), responseSchema),
});
const documentSchema = z.object({
  components: z.object({ schemas: z.record(z.string(), schemaObject) }),
  paths: z.record(z.string(), z.record(z.string(), operationSchema)),
});
const errorExampleSchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
  }),
});

const raw = buildOpenApiDocument({ serverUrl: '/', plan: { per_minute: 60, per_day: 10_000 } });
const doc = documentSchema.parse(raw);
const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, op]) => ({ path, method, op })),
);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The headers of an operation's 200 response, read from the document as served. */
function raw200Headers(operationId: string): Record<string, unknown> {
  const paths = isObject(raw.paths) ? raw.paths : {};
  for (const item of Object.values(paths))
    for (const op of Object.values(isObject(item) ? item : {})) {
      if (!isObject(op) || op.operationId !== operationId || !isObject(op.responses)) continue;
      const ok = op.responses['200'];
      return isObject(ok) && isObject(ok.headers) ? ok.headers : {};
    }
  return {};
}

/** Every value under a `schema` key (parameters, bodies, responses), wherever it sits. */
function inlineSchemas(node: unknown, at: string, out: Array<[string, unknown]> = []) {
  if (Array.isArray(node)) node.forEach((v, i) => inlineSchemas(v, `${at}/${i}`, out));
  else if (isObject(node))
    for (const [k, v] of Object.entries(node)) {
      if (k === 'schema') out.push([`${at}/schema`, v]);
      else inlineSchemas(v, `${at}/${k}`, out);
    }
  return out;
}

/** Every `$id` in the document, wherever it sits. */
function ids(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((v) => ids(v, out));
  else if (isObject(node))
    for (const [k, v] of Object.entries(node)) {
      if (k === '$id' && typeof v === 'string') out.push(v);
      ids(v, out);
    }
  return out;
}

function newAjv() {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'api', components: doc.components }, 'api');
  return ajv;
}

/** A schema of the document compiled with its `#/components/…` refs pointed at the added 'api'. */
function compile(ajv: Ajv2020, schema: unknown) {
  const text = JSON.stringify(schema).replaceAll('"#/components/', '"api#/components/');
  return ajv.compile(schemaObject.parse(JSON.parse(text)));
}

describe('the OpenAPI document', () => {
  it('when the document is built, then no tag shares its name with the document’s own webhooks section (the reference would show two “Webhooks” groups)', () => {
    expect(isObject(raw.webhooks)).toBe(true);
    const tags = Array.isArray(raw.tags) ? raw.tags : [];
    const names = tags.map((t) => (isObject(t) && typeof t.name === 'string' ? t.name.toLowerCase() : ''));
    expect(names).toContain('webhook subscriptions');
    expect(names).not.toContain('webhooks');
  });

  it('when its schemas are checked against the JSON Schema 2020-12 meta-schema, then every one is valid', () => {
    const ajv = newAjv();
    const all: Array<[string, unknown]> = [
      ...Object.entries(doc.components.schemas).map(([name, s]): [string, unknown] => [
        `#/components/schemas/${name}`,
        s,
      ]),
      ...inlineSchemas(raw.paths, '#/paths'),
      ...inlineSchemas(raw.webhooks, '#/webhooks'),
    ];
    expect(all.length).toBeGreaterThan(100);
    const refused = all
      .filter(([, schema]) => !ajv.validateSchema(schemaObject.parse(schema)))
      .map(([where]) => where);
    expect(refused).toEqual([]);
    // A 2020-12 `$id` may not carry a non-empty fragment: none anywhere (components go by $ref).
    expect(ids(raw).filter((id) => /#./.test(id))).toEqual([]);
  });

  it('when an operation takes a path parameter or a body, then the refusals of reading them are documented', () => {
    for (const { path, method, op } of operations) {
      const statuses = Object.keys(op.responses);
      const where = `${method} ${path}`;
      if ((op.parameters ?? []).some((p) => p.in === 'path'))
        expect({ where, statuses }).toEqual({ where, statuses: expect.arrayContaining(['400']) });
      if (method === 'post' || method === 'patch')
        expect({ where, statuses }).toEqual({
          where,
          statuses: expect.arrayContaining(['400', '413', '415']),
        });
    }
    expect(Object.keys(doc.paths['/v1/signals/{signal_id}']!.get!.responses)).toContain('400');
    expect(Object.keys(doc.paths['/v1/webhooks/{webhook_id}']!.patch!.responses)).toEqual(
      expect.arrayContaining(['413', '415']),
    );
    // The gateway refuses a body that is not JSON on the API-key path whatever the method but GET.
    expect(Object.keys(doc.paths['/v1/webhooks/{webhook_id}']!.delete!.responses)).toContain('415');
  });

  it('when createWebhook is read, then it documents the Idempotency-Key, the 200 replay and the 409 conflict', () => {
    const create = doc.paths['/v1/webhooks']!.post!;
    const keys = doc.paths['/v1/account/keys']!.post!;
    expect(create.parameters).toEqual(keys.parameters);
    expect(create.parameters?.map((p) => `${p.in}:${p.name}`)).toEqual(['header:Idempotency-Key']);
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['200', '201', '409']));
    expect(Object.keys(raw200Headers(create.operationId))).toContain('Idempotent-Replayed');
    const conflict = create.responses['409']?.content?.['application/json'];
    expect(JSON.stringify(conflict?.schema)).toContain('IDEMPOTENCY_CONFLICT');
    expect(errorExampleSchema.parse(conflict?.example).error.code).toBe('IDEMPOTENCY_CONFLICT');
  });

  it('when the test and recover operations are read, then the test body is optional and names an event, recover needs since, and the create summary states the cap', () => {
    const ops = (isObject(raw.paths) ? raw.paths : {}) as Record<
      string,
      Record<string, { requestBody?: { required?: boolean }; summary?: string; operationId?: string }>
    >;
    const test = ops['/v1/webhooks/{webhook_id}/test']!.post!;
    const recover = ops['/v1/webhooks/{webhook_id}/recover']!.post!;
    expect([test.requestBody?.required, recover.requestBody?.required]).toEqual([false, true]);
    expect(recover.operationId).toBe('recoverWebhook');
    const schemas = doc.components.schemas;
    expect(schemas.WebhookTestRequest?.required).toBeUndefined();
    expect(JSON.stringify(schemas.WebhookTestRequest?.properties)).toContain('signal.rugged');
    expect(schemas.RecoverWebhookRequest?.required).toEqual(['since']);
    expect(schemas.RecoverWebhookResult?.required).toEqual(['since', 'queued', 'next_cursor']);
    expect(Object.keys(doc.paths['/v1/webhooks/{webhook_id}/recover']!.post!.responses)).toEqual(
      expect.arrayContaining(['202', '400', '404', '409', '429']),
    );
    expect(ops['/v1/webhooks']!.post!.summary).toMatch(/25 by default.*409 CONFLICT naming the limit/);
  });

  it('when the live stream is read, then it is text/event-stream in prose, filtered by comma lists, resumed by Last-Event-ID, opened by a key or a session', () => {
    const item = (isObject(raw.paths) ? raw.paths : {})['/v1/signals/stream'];
    const op = isObject(item) && isObject(item.get) ? item.get : {};
    expect(op.operationId).toBe('streamSignals');
    expect(op.security).toEqual([{ apiKey: [] }, { dashboardSession: [] }]);
    const responses = isObject(op.responses) ? op.responses : {};
    const ok = isObject(responses['200']) ? responses['200'] : {};
    const content = isObject(ok.content) ? ok.content : {};
    expect(Object.keys(content)).toEqual(['text/event-stream']);
    for (const word of [
      'retry:',
      'id:',
      'event:',
      'data:',
      'signal.rugged',
      'reset',
      'overflow',
      'reconnect',
      'error',
      'keep-alive',
    ])
      expect({ word, described: String(ok.description).includes(word) }).toEqual({ word, described: true });
    const example = isObject(content['text/event-stream'])
      ? String(content['text/event-stream'].example)
      : '';
    expect(example).toMatch(/^retry: \d+\n\nid: \S+\nevent: signal\.new\ndata: \{/);
    expect(param('/v1/signals/stream', 'get', 'type')?.schema).toEqual({ type: 'string' });
    expect(param('/v1/signals/stream', 'get', 'events')?.schema).toEqual({ type: 'string' });
    expect(param('/v1/signals/stream', 'get', 'Last-Event-ID')).toBeDefined();
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(['400', '401', '429', '503']));
    // Matched in the document's order, the stream's path comes before the one that takes an id.
    const paths = Object.keys(doc.paths);
    expect(paths.indexOf('/v1/signals/stream')).toBeLessThan(paths.indexOf('/v1/signals/{signal_id}'));
  });

  it('when an operation documents a response, then its example validates against that response (an error example carries a code of its status)', () => {
    const ajv = newAjv();
    const problems: string[] = [];
    for (const { path, method, op } of operations) {
      for (const [status, response] of Object.entries(op.responses)) {
        const media = response.content?.['application/json'];
        if (!media) continue;
        if (media.example === undefined) {
          problems.push(`${method} ${path} ${status}: no example`);
          continue;
        }
        const validate = compile(ajv, media.schema);
        if (!validate(media.example))
          problems.push(`${method} ${path} ${status}: ${ajv.errorsText(validate.errors)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('when a 400 or 401 example is read, then it fits its operation: a field it validates, the message its callers get', () => {
    for (const { path, method, op } of operations) {
      const where = `${method} ${path}`;
      const example = (status: string) =>
        errorExampleSchema.parse(op.responses[status]?.content?.['application/json']?.example).error;
      const bodyRef = op.requestBody?.content['application/json'].schema.$ref;
      const bodySchema =
        typeof bodyRef === 'string' ? doc.components.schemas[bodyRef.split('/').pop() ?? ''] : undefined;
      const fields = [
        ...(op.parameters ?? []).filter((p) => p.in !== 'path').map((p) => p.name),
        ...Object.keys(isObject(bodySchema?.properties) ? bodySchema.properties : {}),
        ...((op.parameters ?? []).some((p) => p.in === 'path') ? ['path'] : []),
        ...(method === 'post' || method === 'patch' ? ['body'] : []),
      ];
      const named = example('400').details?.map((d) => d.field) ?? [];
      expect({ where, named, validated: named.length > 0 && named.every((f) => fields.includes(f)) }).toEqual(
        {
          where,
          named,
          validated: true,
        },
      );
      const unauthorized = example('401').message;
      const expected = path.startsWith('/v1/auth/login')
        ? 'Invalid email or password.'
        : path.startsWith('/v1/auth') || path.startsWith('/v1/account')
          ? 'A dashboard session is required: POST /v1/auth/login.'
          : 'Invalid or missing API key.';
      expect({ where, unauthorized }).toEqual({ where, unauthorized: expected });
    }
  });

  /** A parameter of an operation, by name. */
  const param = (path: string, method: string, name: string) => {
    const item = isObject(raw.paths) ? raw.paths[path] : undefined;
    const op = isObject(item) ? item[method] : undefined;
    const list = isObject(op) && Array.isArray(op.parameters) ? op.parameters : [];
    const found = list.find((p): p is Record<string, unknown> => isObject(p) && p.name === name);
    return found ? { schema: found.schema, description: String(found.description) } : undefined;
  };

  it('when a list operation is read, then limit and page are integers with their bounds, not digit strings', () => {
    for (const [path, method] of [
      ['/v1/signals', 'get'],
      ['/v1/webhooks', 'get'],
      ['/v1/webhooks/{webhook_id}/deliveries', 'get'],
      ['/v1/account/keys', 'get'],
    ] as const) {
      expect({ path, limit: param(path, method, 'limit')?.schema }).toEqual({
        path,
        limit: { type: 'integer', minimum: 1, maximum: 100 },
      });
      expect({ path, page: param(path, method, 'page')?.schema }).toEqual({
        path,
        page: { type: 'integer', minimum: 1, maximum: 1_000_000 },
      });
    }
    expect(param('/v1/signals', 'get', 'status')?.description).toMatch(/performance\.status/);
    expect(param('/v1/signals', 'get', 'status')?.description).not.toMatch(/deliver/);
  });

  it('when responses are read, then every header is required but a repeat’s Idempotent-Replayed, and every 429 and 503 declares Retry-After', () => {
    let rateLimited = 0;
    for (const { path, method } of operations) {
      const responses = (
        raw as {
          paths: Record<
            string,
            Record<
              string,
              { responses: Record<string, { headers?: Record<string, { required?: boolean }> }> }
            >
          >;
        }
      ).paths[path]![method]!.responses;
      for (const [status, response] of Object.entries(responses)) {
        const headers = response.headers ?? {};
        const where = `${method} ${path} ${status}`;
        expect({ where, names: Object.keys(headers) }).toEqual({
          where,
          names: expect.arrayContaining([
            'X-RateLimit-Limit',
            'X-RateLimit-Remaining',
            'X-RateLimit-Reset',
            'X-Request-Id',
          ]),
        });
        // A header may be optional only where an action's repeat adds it (the first answer has none).
        const optional = Object.entries(headers)
          .filter(([, h]) => h.required !== true)
          .map(([n]) => n);
        const route = Object.values(ROUTES).find((r) => r.path === path && r.method === method);
        const takesKey = route !== undefined && 'idempotencyKey' in route && route.idempotencyKey;
        expect({ where, optional }).toEqual({
          where,
          optional: takesKey && optional.length ? ['Idempotent-Replayed'] : [],
        });
        if (status === '429' || status === '503') {
          rateLimited += 1;
          expect({ where, retryAfter: Boolean(headers['Retry-After']) }).toEqual({ where, retryAfter: true });
        }
      }
    }
    expect(rateLimited).toBe(operations.length * 2);
  });

  it('when the schemas are read, then ListMeta has PageMeta’s minimums and only a delivery’s detail carries attempts', () => {
    const props = (name: string) =>
      (doc.components.schemas[name]?.properties ?? {}) as Record<string, { minimum?: number }>;
    for (const name of ['ListMeta', 'PageMeta']) {
      expect({
        name,
        mins: ['total', 'page', 'per_page', 'total_pages'].map((f) => props(name)[f]?.minimum),
      }).toEqual({
        name,
        mins: [0, 1, 1, 0],
      });
    }
    expect(Object.keys(props('WebhookDelivery'))).not.toContain('attempts');
    expect(doc.components.schemas.WebhookDeliveryDetail?.required).toContain('attempts');
    const deliveryOf = (path: string, method: string, status: string) =>
      JSON.stringify(
        doc.components.schemas[
          String(doc.paths[path]![method]!.responses[status]!.content!['application/json']!.schema.$ref)
            .split('/')
            .pop()!
        ],
      );
    expect(deliveryOf('/v1/webhooks/{webhook_id}/deliveries/{delivery_id}', 'get', '200')).toContain(
      'WebhookDeliveryDetail',
    );
    for (const [path, method, status] of [
      ['/v1/webhooks/{webhook_id}/deliveries', 'get', '200'],
      ['/v1/webhooks/{webhook_id}/test', 'post', '202'],
      ['/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry', 'post', '202'],
    ] as const) {
      expect({ path, schema: deliveryOf(path, method, status) }).toEqual({
        path,
        schema: expect.not.stringContaining('Detail'),
      });
      const example = JSON.stringify(
        doc.paths[path]![method]!.responses[status]!.content!['application/json']!.example,
      );
      expect({ path, example }).toEqual({ path, example: expect.not.stringContaining('"attempts"') });
    }
  });

  it('when the webhook payload and the session are read, then event is an enum, signal.winner requires performance, and the session its token and expiry', () => {
    const ajv = newAjv();
    const payload = compile(ajv, { $ref: '#/components/schemas/WebhookPayload' });
    const data = {
      id: 'sig_1',
      token: {
        symbol: 'A',
        name: 'A',
        contract: '0x1234567890',
        age_hours: 1,
        dex_paid: false,
        socials: { twitter: null, telegram: null, website: null },
      },
      metrics: { mcap_entry: 1, mcap_current: 1, volume_24h: 1, holders: 1, liquidity: 1, mcap_ath: 1 },
      type: 'new',
      is_premium: false,
    };
    const performance = { roi: 1, ath_roi: 1, status: 'winner', time_to_ath_hours: 1 };
    const timestamp = '2026-01-15T09:30:00.000Z';
    expect(payload({ event: 'signal.new', timestamp, data })).toBe(true);
    expect(payload({ event: 'signal.winner', timestamp, data })).toBe(false);
    expect(payload({ event: 'signal.winner', timestamp, data: { ...data, performance } })).toBe(true);
    expect(payload({ event: 'signal.moon', timestamp, data: { ...data, performance } })).toBe(false);
    const session = doc.components.schemas.Session!;
    expect(session.required).toEqual(['token', 'expires_at']);
    expect((session.properties as Record<string, { format?: string }>).expires_at?.format).toBe('date-time');
  });

  it('when login and the error codes are read, then login needs no key and every documented code is one something returns', () => {
    expect(
      (raw as { paths: Record<string, Record<string, { security?: unknown }>> }).paths['/v1/auth/login']!
        .post!.security,
    ).toEqual([]);
    const codes = (
      doc.components.schemas.ErrorEnvelope as {
        properties: { error: { properties: { code: { enum: string[] } } } };
      }
    ).properties.error.properties.code.enum;
    expect(codes).not.toContain('BAD_GATEWAY');
    expect(codes).not.toContain('INVALID_STATUS_TRANSITION');
    expect(codes).toContain('METHOD_NOT_ALLOWED');
    const info = (raw as { info: { description: string } }).info.description;
    expect(info).not.toContain('Profile');
    expect(info).toContain('API settings');
  });
});
