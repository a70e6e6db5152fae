import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_ERROR_MESSAGES, type ErrorCode } from '@signal/contracts';
import {
  CLIENT_GONE_STATUS,
  hasBody,
  isAppError,
  pathOfTarget,
  type FieldProblem,
  type InternalTokenCache,
} from '@signal/service-kit';
import type { PlanCaps } from '../../accounts/domain/plan-caps';
import type { OpenStreams } from '../../stream/domain/open-streams';
import {
  STREAM_ROUTE,
  admitStream,
  streamRequestOf,
  type LiveStreamListener,
} from '../../stream/http/live-streams';
import { carriesSecrets } from './no-store.middleware';
import { ATTACHED, type StreamFeed } from '../../stream/http/stream-feed';
import {
  MAX_FORWARDED_BYTES,
  bodyRefusal,
  forward,
  forwardedBytes,
  readClientBody,
  serviceUnavailable,
  streamRequestHeaders,
  type Upstream,
} from '../../http/upstream';

/**
 * The relay: how a request the gateway has admitted goes on to its service, for both paths that
 * admit one — the API-key path (`api-path.ts`) and the dashboard's session path
 * (`dashboard/http/session-proxy.ts`). In order: the sizes are checked, the body is read whole,
 * then a live stream takes a slot and joins the shared feed, or anything else is forwarded; a
 * failure on the way is handed to the path's `refuse`, which words it as that path words errors.
 */

export interface RelayDeps {
  tokens: InternalTokenCache;
  timeoutMs: number;
  /** Bytes of a response held for a client that is not reading before its connection is cut. */
  maxHeldBytes: number;
  /** Live streams open through this process (their cap, revocation and shutdown). */
  streams: OpenStreams;
  /** A live stream with no bytes from the service this long is dead (heartbeats keep it alive). */
  streamIdleMs: number;
  /** The process's one subscription to the service's stream, which streams from now share. */
  feed: StreamFeed;
}

/** The account a request goes on for, as the path that admitted it knows it. */
export interface RelayCaller {
  accountId: string;
  /** The plan's caps: the webhooks service's token carries one, a live stream takes a slot of another. */
  caps: PlanCaps | undefined;
  /** The API key (key path) or the dashboard session (session path): a live stream ends with it. */
  keyId?: string;
  session?: { sessionId: string; issuedAt: number };
  /** When the credential stops being valid (Unix ms), if it does: a live stream ends then. */
  expiresAt: number | null;
  /**
   * Frees the request's place among the account's requests in flight (the key path's): a live
   * stream gives it up once it has its slot or was refused one, since streams have their own cap.
   */
  release?: () => void;
}

/** Why a request is refused, for the path to respond with. */
export interface Refusal {
  code: ErrorCode;
  message?: string;
  retryAfter?: number;
  details?: FieldProblem[];
  /** The request's body is unread: the connection ends with this response. */
  close?: boolean;
  /** The service could not be reached: what failed, for the log. */
  cause?: unknown;
}

export interface RelayRequest {
  /**
   * Which path admitted the request. The key path refuses a body on its headers before reading
   * any of it, ends the connection of any refusal that leaves a body unread, and adds
   * `Cache-Control: no-store` to live streams and to responses that carry secrets; the session
   * path reads a body up to the bound, and its router set `no-store` on every response already.
   */
  via: 'key' | 'session';
  req: IncomingMessage;
  res: ServerResponse;
  upstream: Upstream;
  /** Path and query as the client sent them. */
  url: string;
  requestId: string;
  clientIp: string;
  /** The gateway's response headers so far ([name, value, …]); the relay adds to them. */
  head: string[];
  /** Lower-case names of the gateway's own headers: the service's values of these give way. */
  ownHeaderNames: ReadonlySet<string>;
  /** Responds with a refusal as the path words its errors; the status sent. */
  refuse: (refusal: Refusal) => number;
  /**
   * Told what a live stream's client got once it ended: the feed serves a stream from now long
   * after `relay` resolved `STREAMING` (none: no one asks).
   */
  streamListener?: LiveStreamListener;
}

/** What the client got: its status, and whether it was cut for not reading (a fairness refusal). */
export interface Relayed {
  status: number;
  slowReader: boolean;
}

/**
 * `relay`'s result for a live stream the gateway's feed now serves: the request's own code is
 * done with it (nothing of it waits for the stream's whole life); `streamListener` is told the
 * outcome when the stream ends.
 */
export const STREAMING = 'streaming';

const TARGET_TOO_LARGE = 'The request target and headers are too large to pass on.';
const BODY_TOO_LARGE = 'The request body is larger than any route takes (64 KiB).';
const NOT_JSON = DEFAULT_ERROR_MESSAGES.UNSUPPORTED_MEDIA_TYPE;

/**
 * The service's token for the account: the webhooks service's carries the plan's subscription
 * cap (it enforces it); the others need no limits, and their tokens stay one per account.
 */
export function tokenFor(
  tokens: InternalTokenCache,
  upstream: Upstream,
  accountId: string,
  caps: PlanCaps | undefined,
): string {
  return upstream.name === 'webhooks' && caps
    ? tokens.get(upstream.audience, accountId, { webhooks: caps.webhooks })
    : tokens.get(upstream.audience, accountId);
}

/** Does the request bring a body the relay would read (GET and HEAD go on without one)? */
export function bringsBody(req: IncomingMessage): boolean {
  const method = req.method ?? 'GET';
  return method !== 'GET' && method !== 'HEAD' && hasBody(req.headers);
}

/** Sends an admitted request on to its service (see the module's comment); what the client got. */
export async function relay(
  deps: RelayDeps,
  r: RelayRequest,
  caller: RelayCaller,
): Promise<Relayed | typeof STREAMING> {
  // Read once: what every step below asks of the request.
  const withBody = bringsBody(r.req);
  const path = pathOfTarget(r.url);
  const refusal = refusalOnHeaders(r, withBody);
  if (refusal) return refused(r, refusal);
  if (r.req.method === 'GET' && STREAM_ROUTE.test(path)) return openStream(deps, r, caller);
  return sendOn(deps, r, caller, withBody, path);
}

const refused = (r: RelayRequest, refusal: Refusal): Relayed => ({
  status: r.refuse(refusal),
  slowReader: false,
});

/**
 * What the headers alone refuse: a request target and headers the service's parser would refuse,
 * and on the key path a body that is not JSON (or not UTF-8, or in an encoding the services do not
 * inflate) or is declared larger than any route takes (which refuses at once and never invites an
 * upload that would be dropped).
 */
function refusalOnHeaders(r: RelayRequest, withBody: boolean): Refusal | undefined {
  // What is left of an unread body cannot be told from a next request (and is not waited for).
  const close = r.via === 'key' && withBody;
  if (forwardedBytes(r.req, r.url) > MAX_FORWARDED_BYTES)
    return { code: 'PAYLOAD_TOO_LARGE', message: TARGET_TOO_LARGE, close };
  const problem = close ? bodyRefusal(r.req.headers) : undefined;
  if (problem)
    return {
      code: problem.code,
      message: problem.code === 'PAYLOAD_TOO_LARGE' ? BODY_TOO_LARGE : (problem.message ?? NOT_JSON),
      close,
    };
  return undefined;
}

/** Forwards a request other than a live stream, with its body read whole first. */
async function sendOn(
  deps: RelayDeps,
  r: RelayRequest,
  caller: RelayCaller,
  withBody: boolean,
  path: string,
): Promise<Relayed> {
  let body: Buffer | undefined;
  if (withBody) {
    const read = await readClientBody(r.req, r.res);
    if (!read.ok) {
      if (read.code === 'ABORTED') return { status: CLIENT_GONE_STATUS, slowReader: false };
      return refused(r, { code: 'PAYLOAD_TOO_LARGE', message: BODY_TOO_LARGE, close: true });
    }
    body = read.body;
  }
  // Secrets are never stored by a cache on the way (the service's own Cache-Control gives way
  // to the gateway's), nor is the live stream's head (a HEAD of it comes this way).
  if (r.via === 'key' && (carriesSecrets(path) || STREAM_ROUTE.test(path)))
    r.head.push('Cache-Control', 'no-store');
  const outcome = await forward(
    r.res,
    {
      upstream: r.upstream,
      method: r.req.method ?? 'GET',
      path: r.url,
      headers: r.req.headers,
      body,
      requestId: r.requestId,
      clientIp: r.clientIp,
      responseHeaders: r.head,
      ownHeaderNames: r.ownHeaderNames,
      timeoutMs: deps.timeoutMs,
      maxHeldBytes: deps.maxHeldBytes,
    },
    tokenFor(deps.tokens, r.upstream, caller.accountId, caller.caps),
  );
  if (outcome.ok) return { status: outcome.status, slowReader: outcome.cutSlowReader === true };
  return refused(r, {
    code: outcome.code,
    message: outcome.message,
    retryAfter: outcome.code === 'SERVICE_UNAVAILABLE' ? 1 : undefined,
    cause: outcome.cause,
  });
}

/**
 * A live stream: its query checked (a 400 names the field, whatever streams are open), a slot of
 * the account's cap (429 naming it when all are taken), then the stream from the gateway's shared
 * feed until either side ends it, its key or session ends or expires, or the gateway shuts down.
 */
async function openStream(
  deps: RelayDeps,
  r: RelayRequest,
  caller: RelayCaller,
): Promise<Relayed | typeof STREAMING> {
  let how: ReturnType<typeof streamRequestOf>;
  try {
    how = streamRequestOf(r.url, r.req.headers['last-event-id']);
  } catch (err) {
    if (!isAppError(err)) throw err;
    caller.release?.();
    return refused(r, { code: err.code, message: err.message, details: err.details });
  }
  const admission = await admitStream(
    deps.streams,
    {
      accountId: caller.accountId,
      ...(caller.keyId !== undefined ? { keyId: caller.keyId } : {}),
      ...(caller.session ? { session: caller.session } : {}),
      expiresAt: caller.expiresAt,
    },
    caller.caps?.streams ?? 0,
    deps.streamIdleMs,
  );
  caller.release?.();
  if (!admission.ok)
    return refused(r, { code: admission.code, message: admission.message, retryAfter: admission.retryAfter });
  admission.listener = r.streamListener;
  /** The fan-out serves the stream: it frees the slot when the stream ends. */
  let attached = false;
  try {
    if (r.via === 'key') r.head.push('Cache-Control', 'no-store');
    const served = await deps.feed.open(
      r.res,
      { headers: r.head, ownHeaderNames: r.ownHeaderNames },
      how,
      admission.control,
      admission,
      () => ({
        path: r.url,
        headers: streamRequestHeaders(
          r.req.headers,
          tokenFor(deps.tokens, r.upstream, caller.accountId, caller.caps),
          r.requestId,
          r.clientIp,
        ),
        timeoutMs: deps.timeoutMs,
      }),
    );
    if (served === ATTACHED) {
      attached = true;
      return STREAMING;
    }
    if (served.ok) return { status: served.status, slowReader: served.overflowed };
    return refused(r, {
      code: 'SERVICE_UNAVAILABLE',
      message: serviceUnavailable(r.upstream.name),
      retryAfter: 1,
    });
  } finally {
    if (!attached) await admission.closed();
  }
}
