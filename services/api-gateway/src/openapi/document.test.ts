import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import { buildOpenApiDocument } from './document';
import { enrichDocument } from './enrich';

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

const raw = enrichDocument(buildOpenApiDocument('/', { per_minute: 60, per_day: 10_000 }));
const doc = documentSchema.parse(raw);
const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, op]) => ({ path, method, op })),
);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The headers of an operation's 200 answer, read from the document as served. */
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
  it('when the document is built, then no tag shares its name with the document’s own webhooks section (the reference showed two “Webhooks” groups)', () => {
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
});
