import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type request from 'supertest';
import { z } from 'zod';

/**
 * The contract check of the e2e suite: a real exchange with the gateway against the OpenAPI
 * document it serves. A response must belong to a documented operation, carry a status that
 * operation declares, every header declared required for it, and a body valid against its
 * schema; a request the server accepted (2xx) must be one the document allows (declared query
 * parameters with valid values, a valid body). A known path asked with a method it does not take
 * must be a 405 whose `Allow` names the documented methods.
 */

const jsonObject = z.record(z.string(), z.unknown());
const media = z.object({ schema: jsonObject, example: z.unknown().optional() });
const headerSpec = z.object({ required: z.boolean().optional(), schema: jsonObject.optional() });
const responseSpec = z.object({
  headers: z.record(z.string(), headerSpec).optional(),
  content: z.record(z.string(), media).optional(),
});
const parameterSpec = z.object({
  name: z.string(),
  in: z.string(),
  required: z.boolean().optional(),
  schema: jsonObject.optional(),
});
const operationSpec = z.object({
  operationId: z.string(),
  parameters: z.array(parameterSpec).optional(),
  requestBody: z.object({ content: z.record(z.string(), media) }).optional(),
  responses: z.record(z.string(), responseSpec),
});
const documentSpec = z.object({
  components: z.object({ schemas: z.record(z.string(), jsonObject) }),
  paths: z.record(z.string(), z.record(z.string(), operationSpec)),
});
export type OpenApiDocument = z.infer<typeof documentSpec>;

const errorExample = z.object({
  error: z.object({ request_id: z.string().optional() }).catchall(z.unknown()),
});

export interface ContractChecker {
  document: OpenApiDocument;
  /** The documented operation a response belongs to, or undefined. */
  operationOf(res: request.Response): { path: string; method: string } | undefined;
  /** Every way the exchange departs from the document; empty when it keeps to it. */
  problems(res: request.Response): string[];
  /** The documented error example of an operation's status, without its request id. */
  errorExample(path: string, method: string, status: number): Record<string, unknown>;
}

const templateRegex = (path: string) =>
  new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);

export function contractChecker(raw: unknown): ContractChecker {
  const document = documentSpec.parse(raw);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'api', components: document.components }, 'api');
  const compiled = new Map<string, ValidateFunction>();
  const validator = (schema: Record<string, unknown>) => {
    // Schemas refer to components of the document: point those refs at the added 'api' schema.
    const text = JSON.stringify(schema).replaceAll('"#/components/', '"api#/components/');
    let v = compiled.get(text);
    if (!v) {
      v = ajv.compile(jsonObject.parse(JSON.parse(text)));
      compiled.set(text, v);
    }
    return v;
  };
  const templates = Object.keys(document.paths).map((path) => ({ path, regex: templateRegex(path) }));

  const where = (res: request.Response) => {
    const url = new URL(res.request.url);
    return { method: res.request.method.toLowerCase(), url };
  };
  const templateOf = (pathname: string) => templates.find((t) => t.regex.test(pathname))?.path;

  const requestProblems = (
    res: request.Response,
    op: z.infer<typeof operationSpec>,
    url: URL,
    at: string,
  ): string[] => {
    const out: string[] = [];
    const query = (op.parameters ?? []).filter((p) => p.in === 'query');
    for (const [name, value] of url.searchParams) {
      const spec = query.find((p) => p.name === name);
      if (!spec) {
        out.push(`${at}: accepted the undocumented query parameter ${name}`);
        continue;
      }
      // Query values arrive as text: digits stand for the integer a client passes.
      const typed = spec.schema?.type === 'integer' && /^\d+$/.test(value) ? Number(value) : value;
      const v = validator(spec.schema ?? {});
      if (!v(typed)) out.push(`${at}: accepted ${name}=${value} (${ajv.errorsText(v.errors)})`);
    }
    for (const p of query)
      if (p.required && !url.searchParams.has(p.name)) out.push(`${at}: accepted without ${p.name}`);
    const sent: unknown = Reflect.get(res.request, '_data');
    const bodySchema = op.requestBody?.content['application/json']?.schema;
    if (bodySchema && typeof sent === 'object' && sent !== null) {
      const v = validator(bodySchema);
      if (!v(sent)) out.push(`${at}: accepted a body the document refuses (${ajv.errorsText(v.errors)})`);
    }
    return out;
  };

  return {
    document,
    operationOf(res) {
      const { method, url } = where(res);
      const path = templateOf(url.pathname);
      return path && document.paths[path]?.[method] ? { path, method } : undefined;
    },
    problems(res) {
      const { method, url } = where(res);
      if (!url.pathname.startsWith('/v1/')) return [];
      const at = `${method.toUpperCase()} ${url.pathname} ${res.status}`;
      const path = templateOf(url.pathname);
      if (!path) return [`${at}: no documented path`];
      const item = document.paths[path] ?? {};
      const op = item[method];
      if (!op) {
        const documented = Object.keys(item).map((m) => m.toUpperCase());
        const allow = (res.headers.allow ?? '').split(/,\s*/).filter((m) => m !== 'HEAD' && m !== 'OPTIONS');
        if (res.status !== 405) return [`${at}: a method the path does not take is not a 405`];
        return allow.sort().join() === documented.sort().join()
          ? []
          : [`${at}: Allow "${res.headers.allow}" is not the documented ${documented.join(', ')}`];
      }
      const spec = op.responses[String(res.status)];
      if (!spec) return [`${at}: status not declared for ${op.operationId}`];
      const out: string[] = [];
      for (const [name, header] of Object.entries(spec.headers ?? {})) {
        const value = res.headers[name.toLowerCase()];
        if (value === undefined) {
          if (header.required) out.push(`${at}: declared header ${name} missing`);
          continue;
        }
        const typed = header.schema?.type === 'integer' && /^\d+$/.test(value) ? Number(value) : value;
        const v = validator(header.schema ?? {});
        if (!v(typed)) out.push(`${at}: header ${name}: ${value} (${ajv.errorsText(v.errors)})`);
      }
      const schema = spec.content?.['application/json']?.schema;
      if (schema) {
        const v = validator(schema);
        if (!v(res.body)) out.push(`${at}: body (${ajv.errorsText(v.errors)})`);
      }
      if (res.status >= 200 && res.status < 300) out.push(...requestProblems(res, op, url, at));
      return out;
    },
    errorExample(path, method, status) {
      const example =
        document.paths[path]?.[method]?.responses[String(status)]?.content?.['application/json']?.example;
      const { request_id: _id, ...rest } = errorExample.parse(example).error;
      return rest;
    },
  };
}
