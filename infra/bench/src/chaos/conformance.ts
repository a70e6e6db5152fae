import { ROUTES, buildOpenApiDocument, fillPath, routeName, type HttpMethod } from '@signal/contracts';
// ajv is the repository's own dev dependency (the e2e contract test's validator), resolved from the root.
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { request } from 'undici';

/**
 * The conformance walk of a mixed-version run: every operation an API key can call, once or
 * more, through the gateways, each response held to the OpenAPI documents of the versions
 * running: its status declared for the operation, its JSON body valid against the declared
 * schema, in this checkout's document or in the release's. A service one version back answers as
 * its release documented (a field added since is not in its answers until it is upgraded, which
 * is what the baselines' breaking-change check allows); an answer neither version documents
 * fails the walk.
 */

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface ConformanceResult {
  /** Exchanges checked. */
  checked: number;
  /** Operations (method + path template) the walk reached. */
  operations: number;
  /** Steps tried again after a 503 or 504. */
  retried: number;
  problems: string[];
}

interface Step {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** The path template of the operation (as the document names it). */
  template: string;
  /** The concrete path (template with ids filled in, query included). */
  path: string;
  body?: unknown;
  /** The status this step expects (several: any of them, each a documented outcome). */
  expect: number | number[];
  auth?: boolean;
  /** Sent with an `Idempotency-Key`, so a retried creation makes one resource. */
  idempotent?: boolean;
}

const METHODS = { get: 'GET', post: 'POST', patch: 'PATCH', delete: 'DELETE' } as const satisfies Record<
  HttpMethod,
  Step['method']
>;

/** A step of a route of the table: its method and template from the entry, `params` filled in and `query` after. */
function stepOf(
  route: { method: HttpMethod; path: string },
  rest: Omit<Step, 'method' | 'template' | 'path'> & { params?: Record<string, string>; query?: string },
): Step {
  const { params, query, ...step } = rest;
  const path = fillPath(route.path, params);
  return {
    ...step,
    method: METHODS[route.method],
    template: route.path,
    path: query === undefined ? path : `${path}?${query}`,
  };
}

/** Tries of one step: a 503 or 504 (a slow or busy service) is tried again, as a client does. */
const TRIES = 3;

const DOCUMENT_OPTIONS = { serverUrl: 'http://gateway', plan: { per_minute: 1, per_day: 1 } };

/** The OpenAPI document a release's build makes (its `packages/contracts`). */
function releaseDocument(root: string): Json {
  const contracts: unknown = createRequire(__filename)(
    path.join(root, 'packages', 'contracts', 'dist', 'index.js'),
  );
  const build = isObject(contracts) ? contracts.buildOpenApiDocument : undefined;
  if (typeof build !== 'function')
    throw new Error(`${root}: its contracts build has no buildOpenApiDocument`);
  const doc: unknown = build(DOCUMENT_OPTIONS);
  if (!isObject(doc)) throw new Error(`${root}: its OpenAPI document is not an object`);
  return doc;
}

/** Problems of one exchange: none when any of the documents holds it. */
function documentsValidator(releaseRoots: readonly string[]) {
  const checks = [
    buildOpenApiDocument(DOCUMENT_OPTIONS),
    ...[...new Set(releaseRoots)].map(releaseDocument),
  ].map(documentValidator);
  return (step: Step, status: number, body: unknown): string[] => {
    const [own = [], ...others] = checks.map((check) => check(step, status, body));
    return others.some((problems) => problems.length === 0) ? [] : own;
  };
}

function documentValidator(doc: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'api', components: doc.components }, 'api');
  const compiled = new Map<string, ValidateFunction>();
  const validator = (schema: unknown) => {
    const text = JSON.stringify(schema).replaceAll('"#/components/', '"api#/components/');
    let v = compiled.get(text);
    if (!v) {
      const parsed: unknown = JSON.parse(text);
      v = ajv.compile(isObject(parsed) ? parsed : {});
      compiled.set(text, v);
    }
    return v;
  };
  const paths = isObject(doc.paths) ? doc.paths : {};
  return (step: Step, status: number, body: unknown): string[] => {
    const at = `${step.method} ${step.path} ${status}`;
    const item = paths[step.template];
    const op = isObject(item) ? item[step.method.toLowerCase()] : undefined;
    if (!isObject(op)) return [`${at}: no documented operation ${step.method} ${step.template}`];
    const responses = isObject(op.responses) ? op.responses : {};
    const spec = responses[String(status)];
    if (!isObject(spec)) return [`${at}: status not declared for ${String(op.operationId)}`];
    const out: string[] = [];
    const expected = Array.isArray(step.expect) ? step.expect : [step.expect];
    if (!expected.includes(status)) out.push(`${at}: expected ${expected.join(' or ')}`);
    const content = isObject(spec.content) ? spec.content['application/json'] : undefined;
    if (isObject(content) && content.schema !== undefined) {
      const v = validator(content.schema);
      if (!v(body)) out.push(`${at}: body departs from the document (${ajv.errorsText(v.errors)})`);
    }
    return out;
  };
}

/** Runs the walk with `key` against `gatewayUrl`; `hookUrl` receives the test subscription's deliveries. */
export async function conformanceWalk(
  gatewayUrl: string,
  key: string,
  hookUrl: string,
  /** Builds of the other versions running (their documents hold too). */
  releaseRoots: readonly string[] = [],
): Promise<ConformanceResult> {
  const check = documentsValidator(releaseRoots);
  const problems: string[] = [];
  const reached = new Set<string>();
  let checked = 0;
  let retried = 0;
  const send = (step: Step, idempotencyKey: string) =>
    request(`${gatewayUrl}${step.path}`, {
      method: step.method,
      headers: {
        ...(step.auth === false ? {} : { authorization: `Bearer ${key}` }),
        ...(step.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(step.idempotent ? { 'idempotency-key': idempotencyKey } : {}),
      },
      body: step.body !== undefined ? JSON.stringify(step.body) : undefined,
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
  const run = async (step: Step): Promise<unknown> => {
    const idempotencyKey = `conformance-${randomUUID()}`;
    let res = await send(step, idempotencyKey);
    for (let tries = 1; tries < TRIES && (res.statusCode === 503 || res.statusCode === 504); tries++) {
      await res.body.dump();
      retried += 1;
      await new Promise((r) => setTimeout(r, 1000));
      res = await send(step, idempotencyKey);
    }
    const text = await res.body.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: checked as text (and refused by any JSON schema)
    }
    checked += 1;
    reached.add(`${step.method} ${step.template}`);
    problems.push(...check(step, res.statusCode, body));
    return body;
  };
  const data = (body: unknown): unknown => (isObject(body) ? body.data : undefined);
  const firstId = (body: unknown): string | undefined => {
    const list = data(body);
    const first: unknown = Array.isArray(list) ? list[0] : undefined;
    return isObject(first) && typeof first.id === 'string' ? first.id : undefined;
  };

  const signals = await run(stepOf(ROUTES.listSignals, { query: 'limit=5', expect: 200 }));
  const signalId = firstId(signals);
  if (signalId) await run(stepOf(ROUTES.getSignal, { params: { signal_id: signalId }, expect: 200 }));
  else problems.push(`${routeName(ROUTES.listSignals)}: no signal to read (the load created none?)`);
  await run(
    stepOf(ROUTES.getSignal, { params: { signal_id: 'sig_01KAB3P0000000000000000000' }, expect: 404 }),
  );
  await run(stepOf(ROUTES.listSignals, { query: 'limit=0', expect: 400 }));
  await run(stepOf(ROUTES.listSignals, { expect: 401, auth: false }));
  await run(stepOf(ROUTES.getStats, { query: 'period=7d', expect: 200 }));
  await run(stepOf(ROUTES.getStats, { query: 'period=1y', expect: 400 }));

  const created = await run(
    stepOf(ROUTES.createWebhook, {
      body: { url: hookUrl, events: ['signal.new'], description: 'conformance' },
      expect: 201,
      idempotent: true,
    }),
  );
  const hook = data(created);
  const hookId = isObject(hook) && typeof hook.id === 'string' ? hook.id : undefined;
  if (!hookId)
    return {
      checked,
      operations: reached.size,
      retried,
      problems: [...problems, `${routeName(ROUTES.createWebhook)}: no id`],
    };
  const hookParams = { webhook_id: hookId };
  await run(stepOf(ROUTES.listWebhooks, { query: 'limit=5', expect: 200 }));
  await run(stepOf(ROUTES.getWebhook, { params: hookParams, expect: 200 }));
  await run(
    stepOf(ROUTES.updateWebhook, {
      params: hookParams,
      body: { events: ['signal.new', 'signal.winner'] },
      expect: 200,
    }),
  );
  await run(stepOf(ROUTES.updateWebhook, { params: hookParams, body: {}, expect: 400 }));
  await run(stepOf(ROUTES.rotateWebhookSecret, { params: hookParams, expect: 200 }));
  const test = await run(stepOf(ROUTES.sendWebhookTest, { params: hookParams, body: {}, expect: 202 }));
  const delivery = data(test);
  const deliveryId = isObject(delivery) && typeof delivery.id === 'string' ? delivery.id : undefined;
  await run(stepOf(ROUTES.listWebhookDeliveries, { params: hookParams, expect: 200 }));
  if (deliveryId) {
    const deliveryParams = { ...hookParams, delivery_id: deliveryId };
    await run(stepOf(ROUTES.getWebhookDelivery, { params: deliveryParams, expect: 200 }));
    await run(
      stepOf(ROUTES.retryWebhookDelivery, {
        params: deliveryParams,
        // 409 while the test delivery's own attempt is still under way.
        expect: [202, 409],
      }),
    );
  } else problems.push(`${routeName(ROUTES.sendWebhookTest)}: no delivery id`);
  await run(
    stepOf(ROUTES.recoverWebhook, {
      params: hookParams,
      body: { since: new Date(Date.now() - 3_600_000).toISOString() },
      expect: 202,
    }),
  );
  await run(stepOf(ROUTES.deleteWebhook, { params: hookParams, expect: 200 }));
  await run(stepOf(ROUTES.getWebhook, { params: hookParams, expect: 404 }));
  return { checked, operations: reached.size, retried, problems };
}
