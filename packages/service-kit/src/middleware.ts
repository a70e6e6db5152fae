import { randomUUID } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import express, { type ErrorRequestHandler, type Request, type RequestHandler } from 'express';
import { ERROR_STATUS, defaultErrorMessage, type ErrorCode } from '@signal/contracts';
import { AppError, NOT_A_JSON_OBJECT, isAppError, quotedForMessage, type FieldProblem } from './app-error';
import { recordedStatus } from './client-gone';
import type { Logger } from './logger';
import { accessLogSampleRate } from './metrics';
import { requestContext } from './request-context';
import { currentTraceId } from './trace-context';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** A sane inbound X-Request-Id (so traces join up), else a new one. */
export function requestIdOf(inbound: string | string[] | undefined): string {
  return typeof inbound === 'string' && REQUEST_ID_PATTERN.test(inbound) ? inbound : `req_${randomUUID()}`;
}

/** Accepts a sane inbound X-Request-Id, else makes one; echoes it back. */
export function requestIdMiddleware(): RequestHandler {
  return (req, res, next) => {
    const requestId = requestIdOf(req.headers['x-request-id']);
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    requestContext.run({ requestId }, () => next());
  };
}

export interface AccessLine {
  method: string;
  /** The path without its query string. */
  path: string;
  status: number;
  /** `process.hrtime.bigint()` when the request arrived. */
  started: bigint;
  requestId: string | undefined;
  traceId: string | undefined;
}

/**
 * One line per request at info (sampled by ACCESS_LOG_SAMPLE for successes; every error is
 * logged); server faults at error. A 503 from /readyz is the probe's answer while a dependency is
 * not there yet (every start), not a fault: at info, or each start logs errors nobody must act on.
 */
export function writeAccessLine(logger: Logger, line: AccessLine): void {
  if (line.status < 400 && Math.random() >= accessLogSampleRate()) return;
  const level = line.status >= 500 && !(line.status === 503 && line.path === '/readyz') ? 'error' : 'info';
  // A line the logger's level drops is not built (every 4xx of the API path comes here).
  if (!logger.isLevelEnabled(level)) return;
  const ms = Number(process.hrtime.bigint() - line.started) / 1e6;
  logger[level](
    {
      method: line.method,
      path: line.path,
      status: line.status,
      ms: Math.round(ms * 10) / 10,
      request_id: line.requestId,
      ...(line.traceId ? { trace_id: line.traceId } : {}),
    },
    'request',
  );
}

/** The path of a request target (path and query), without its query. */
export const pathOfTarget = (target: string): string => {
  const q = target.indexOf('?');
  return q === -1 ? target : target.slice(0, q);
};

export function accessLogMiddleware(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    // Read now: the tracing instrumentation made the request's span before any middleware ran.
    const traceId = currentTraceId();
    // 'close', not 'finish': a request whose client left before its response gets its line too
    // (a login or a key creation goes on without its client and must leave a trace).
    res.once('close', () => {
      // From the original target: a request that ends inside a mounted router (its client left
      // while a sub-router's middleware ran) has `req.path` relative to that router then.
      writeAccessLine(logger, {
        method: req.method,
        path: pathOfTarget(req.originalUrl),
        status: recordedStatus(res),
        started,
        requestId: typeof res.locals.requestId === 'string' ? res.locals.requestId : undefined,
        traceId,
      });
    });
    next();
  };
}

/** Methods whose body is read: a DELETE's too, since a route that takes none still checks one. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Does a request carry a body (a length above zero, or chunked)? */
export function hasBody(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  return Number(headers['content-length'] ?? 0) > 0 || headers['transfer-encoding'] !== undefined;
}

/** Is a Content-Type JSON: `application/json` or `application/<something>+json`, any parameters? */
export function isJsonMediaType(contentType: string | string[] | undefined): boolean {
  if (typeof contentType !== 'string') return false;
  const media = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return media === 'application/json' || /^application\/[!#$%&'*+.^_`|~0-9a-z-]+\+json$/.test(media);
}

/** Why a body is refused on its head: the code, and what to say when the code's default is not it. */
export interface BodyRefusal {
  code: 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE';
  message?: string;
}

/**
 * Why a body is refused from the request's head alone, before a byte of it is read, or
 * undefined: not JSON, a charset other than UTF-8 or a Content-Encoding the body reader does not
 * inflate (415: what the body reader would say once it had read it all), or declared larger than
 * `maxBytes` (413). Refusing on the head responds at once and never invites an upload
 * (`Expect: 100-continue`) that would be dropped.
 */
export function bodyRefusalOf(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  maxBytes: number,
): BodyRefusal | undefined {
  if (!hasBody(headers)) return undefined;
  const type = headers['content-type'];
  if (!isJsonMediaType(type)) return { code: 'UNSUPPORTED_MEDIA_TYPE' };
  const charset = CHARSET.exec(String(type))?.[1];
  if (charset !== undefined && !UTF8_NAMES.test(charset))
    return { code: 'UNSUPPORTED_MEDIA_TYPE', message: charsetMessage(charset) };
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && !BODY_ENCODINGS.has(String(encoding).toLowerCase()))
    return { code: 'UNSUPPORTED_MEDIA_TYPE', message: encodingMessage(String(encoding)) };
  if (Number(headers['content-length'] ?? 0) > maxBytes) return { code: 'PAYLOAD_TOO_LARGE' };
  return undefined;
}

/** The Content-Encodings the body reader inflates: one of these, as it reads the header. */
const BODY_ENCODINGS = new Set(['identity', 'gzip', 'deflate', 'br', 'zstd']);
const encodingMessage = (encoding: string) =>
  `Content-Encoding "${quotedForMessage(encoding)}" is not supported: send the body as is, or gzip, deflate, br or zstd.`;

/**
 * A refusal of a request whose body is left unread: its connection ends with the response
 * (`Connection: close`), since what is left of the body cannot be told from a next request, and
 * reading it all first (body-parser's way) lets a client hold the connection for as long as it
 * keeps sending. The server bounds what it still reads before it closes.
 */
export const unreadBodyRefused = (code: ErrorCode, message?: string): AppError =>
  new AppError(code, message, { headers: { Connection: 'close' } });

/** The refusal `bodyRefusalOf` names, worded with the limit it applied. */
const refusalOf = (refusal: BodyRefusal, maxBytes: number): AppError =>
  unreadBodyRefused(
    refusal.code,
    refusal.code === 'PAYLOAD_TOO_LARGE'
      ? `The request body is larger than this route takes (${Math.round(maxBytes / 1024)} KiB).`
      : refusal.message,
  );

/**
 * Refuses, before it is read, a body `bodyRefusalOf` refuses, on any route behind it, with the
 * largest body the request's route takes (`maxBytesOf`): for an app whose routes take JSON or
 * nothing.
 */
export function refuseUnreadBodies(maxBytesOf: (req: Request) => number): RequestHandler {
  return (req, _res, next) => {
    const maxBytes = maxBytesOf(req);
    const refusal = bodyRefusalOf(req.headers, maxBytes);
    next(refusal ? refusalOf(refusal, maxBytes) : undefined);
  };
}

/**
 * JSON bodies only: a body of another type is a 415, a too-large one a 413 (at once when its
 * length says so), broken JSON a 400. An empty body is fine (e.g. POST …/test).
 */
export function jsonBodyMiddleware(limitBytes: number): RequestHandler[] {
  const parse = express.json({
    limit: limitBytes,
    strict: true,
    type: () => true,
    // JSON text is UTF-8 (RFC 8259): bytes that are not would be decoded to U+FFFD and stored
    // as something the client never sent.
    verify: (_req, _res, bytes) => {
      if (!isUtf8(bytes)) throw new Error(NOT_UTF8);
    },
  });
  return [
    (req, _res, next) => {
      if (!BODY_METHODS.has(req.method) || !hasBody(req.headers)) return next();
      const refusal = bodyRefusalOf(req.headers, limitBytes);
      if (refusal) return next(refusalOf(refusal, limitBytes));
      const contentType = String(req.headers['content-type']);
      // Other names of UTF-8, and ASCII (its subset), which the body parser does not know.
      if (CHARSET.exec(contentType)?.[1]?.toLowerCase() !== 'utf-8')
        req.headers['content-type'] = contentType.replace(CHARSET, '; charset=utf-8');
      return parse(req, _res, next);
    },
    (req, _res, next) => {
      const found = unstorableText(req.body);
      if (found === undefined) return next();
      const name = quotedForMessage(found.path || 'body');
      next(
        found.problem === 'nul'
          ? new AppError('VALIDATION_ERROR', `${name} must not contain the NUL character (\\u0000)`, {
              details: [{ field: name, message: 'contains the NUL character' }],
            })
          : new AppError(
              'VALIDATION_ERROR',
              `${name} must be valid Unicode: it holds a lone surrogate (\\uD800–\\uDFFF without its pair)`,
              { details: [{ field: name, message: 'holds a lone surrogate' }] },
            ),
      );
    },
  ];
}

const NOT_UTF8 = 'The request body is not valid UTF-8.';

/**
 * The charset a JSON body declares. JSON text is UTF-8 (RFC 8259): the body parser would decode
 * UTF-16 and UTF-32 (and refuse ASCII, UTF-8's subset), so anything but UTF-8 and ASCII is a 415,
 * and the bytes are checked as UTF-8 whatever the label.
 */
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;
/** The charset names a JSON body may declare: UTF-8's, and ASCII's (its subset). */
const UTF8_NAMES = /^(utf-?8|(us-)?ascii)$/i;

const charsetMessage = (charset: string) =>
  `charset "${quotedForMessage(charset)}" is not supported: JSON bodies are UTF-8.`;
const charsetRefused = (charset: string) => new AppError('UNSUPPORTED_MEDIA_TYPE', charsetMessage(charset));

/** Why a string cannot be stored as sent: U+0000, or a lone surrogate. */
type TextProblem = 'nul' | 'surrogate';

/** In a `u` pattern a pair is one code point: only a surrogate without its pair matches. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

const problemOf = (text: string): TextProblem | undefined =>
  text.includes('\u0000') ? 'nul' : LONE_SURROGATE.test(text) ? 'surrogate' : undefined;

/**
 * The path of the first string (value or key) in a parsed JSON body that cannot be stored as
 * sent, '' for the body itself, or undefined. The MongoDB-wire store here (FerretDB on
 * PostgreSQL) cannot hold NUL in text and failed the write with a 500; a lone surrogate (`"\ud800"`
 * is valid JSON) is not UTF-8, so any store writes U+FFFD instead, and the response that echoed
 * the request differed from what a read returns. No field of ours has a use for either.
 */
interface BodyNode {
  value: unknown;
  key: string;
  parent: BodyNode | undefined;
}

function pathOf(node: BodyNode): string {
  const keys: string[] = [];
  for (let n: BodyNode | undefined = node; n?.parent; n = n.parent) keys.push(n.key);
  return keys.reverse().join('.');
}

function unstorableText(body: unknown): { path: string; problem: TextProblem } | undefined {
  // Iterative, with paths made only for the result: a body may nest thousands of levels deep, and
  // a recursive walk would overflow the stack on it.
  const pending: BodyNode[] = [{ value: body, key: '', parent: undefined }];
  for (let node = pending.pop(); node; node = pending.pop()) {
    const value = node.value;
    if (typeof value === 'string') {
      const problem = problemOf(value);
      if (problem) return { path: pathOf(node), problem };
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--)
        pending.push({ value: value[i], key: String(i), parent: node });
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, inner] of Object.entries(value)) {
        const child = { value: inner, key, parent: node };
        const problem = problemOf(key);
        if (problem) return { path: pathOf(child), problem };
        pending.push(child);
      }
    }
  }
  return undefined;
}

export function notFoundMiddleware(): RequestHandler {
  return (req, _res, next) =>
    next(new AppError('NOT_FOUND', `No route for ${req.method} ${quotedForMessage(req.path)}`));
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function fromBodyParser(err: unknown): AppError | undefined {
  // Express decodes path parameters with decodeURIComponent: `/v1/webhooks/%ZZ` throws here.
  if (err instanceof URIError)
    return new AppError(
      'VALIDATION_ERROR',
      'The path holds a percent-escape that does not decode: % and two hex digits, of UTF-8 bytes.',
      {
        details: [{ field: 'path', message: 'a percent-escape that does not decode' }],
      },
    );
  // body-parser's errors say what went wrong in `type`.
  const type = typeof err === 'object' && err !== null && 'type' in err ? err.type : undefined;
  if (type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE');
  if (type === 'entity.parse.failed') {
    // Strict parsing also refuses valid JSON that is not an object or array (`null`, `"x"`, `1`).
    const raw = typeof err === 'object' && err !== null && 'body' in err ? err.body : undefined;
    if (typeof raw === 'string' && isJson(raw))
      return new AppError('VALIDATION_ERROR', NOT_A_JSON_OBJECT, {
        details: [{ field: 'body', message: NOT_A_JSON_OBJECT }],
      });
    return new AppError('VALIDATION_ERROR', 'The request body is not valid JSON.', {
      details: [{ field: 'body', message: 'invalid JSON' }],
    });
  }
  if (type === 'entity.verify.failed')
    return new AppError('VALIDATION_ERROR', NOT_UTF8, {
      details: [{ field: 'body', message: 'not valid UTF-8' }],
    });
  // The media type was JSON: say what else was refused.
  const named = (key: 'encoding' | 'charset') =>
    typeof err === 'object' && err !== null && key in err ? String(Reflect.get(err, key)) : '';
  if (type === 'encoding.unsupported')
    return new AppError('UNSUPPORTED_MEDIA_TYPE', encodingMessage(named('encoding')));
  if (type === 'charset.unsupported') return charsetRefused(named('charset'));
  if (type === 'request.aborted') return new AppError('VALIDATION_ERROR', 'The request body was cut off.');
  // Other client faults the body reader or the file sender (sendFile, express.static) report
  // as bare http-errors: a gzip body that does not inflate (zlib's error passed on as a 400), an
  // unsatisfiable Range (416), a failed If-Match (412). Our table has no 412/416 codes.
  const status = typeof err === 'object' && err !== null && 'status' in err ? err.status : undefined;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 404) return new AppError('NOT_FOUND');
    if (status === 416) return new AppError('VALIDATION_ERROR', 'The Range header cannot be satisfied.');
    if (status === 412) return new AppError('VALIDATION_ERROR', 'A precondition header did not hold.');
    return new AppError('VALIDATION_ERROR', 'The request body could not be read.', {
      details: [{ field: 'body', message: 'unreadable body (content encoding or framing)' }],
    });
  }
  return undefined;
}

export interface ErrorDescription {
  code: ErrorCode;
  message?: string;
  retryAfter?: number;
  details?: FieldProblem[];
}

/**
 * The error envelope (`{ success: false, error: { code, message, request_id, retry_after?,
 * details? } }`, docs/api.md) and the status of its code (packages/contracts/src/errors.ts): the
 * one place both are made.
 */
export function errorResponse(
  e: ErrorDescription,
  requestId: string | undefined,
): { status: number; body: string } {
  return {
    status: ERROR_STATUS[e.code],
    body: JSON.stringify({
      success: false,
      error: {
        code: e.code,
        message: e.message ?? defaultErrorMessage(e.code, e.retryAfter),
        request_id: requestId,
        ...(e.retryAfter !== undefined ? { retry_after: e.retryAfter } : {}),
        ...(e.details ? { details: e.details } : {}),
      },
    }),
  };
}

/** The one error handler: logs, adds the request id, responds with the error envelope. */
export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (err: unknown, _req, res, _next) => {
    const appError = isAppError(err)
      ? err
      : (fromBodyParser(err) ?? new AppError('INTERNAL_ERROR', undefined, { cause: err }));
    // A 503 with no cause is a refusal by design (work shed while busy: password turns, a
    // store's fallback bound), counted by its own metrics: a warning without a stack, or a
    // flood of them buries the errors. Anything else at 5xx failed, and is logged as such.
    if (appError.status === 503 && appError.cause === undefined)
      logger.warn({ code: appError.code, message: appError.message }, 'request refused while busy');
    else if (appError.status >= 500)
      logger.error({ err: appError.cause ?? err, code: appError.code }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // A file sender that failed half-way may have set its own type and range already.
    res.removeHeader('Content-Range');
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    for (const [name, value] of Object.entries(appError.headers ?? {})) res.setHeader(name, value);
    if (appError.retryAfter !== undefined) res.setHeader('Retry-After', String(appError.retryAfter));
    const requestId = typeof res.locals.requestId === 'string' ? res.locals.requestId : undefined;
    const { status, body } = errorResponse(appError, requestId);
    res.status(status).type('application/json').send(body);
  };
}

/**
 * A wrong method on a known path is a 405 naming the methods it takes (`Allow`), from the route
 * table (contracts' `methodNotAllowedRoutes`); mount after a router's own routes.
 */
export function refuseOtherMethods(
  router: express.Router,
  routes: ReadonlyArray<{ path: string; use: string; allow: string }>,
): void {
  for (const { path, use, allow } of routes) {
    router.all(path, (req) => {
      throw new AppError('METHOD_NOT_ALLOWED', `${req.method} is not allowed here; use ${use}.`, {
        headers: { Allow: allow },
      });
    });
  }
}
