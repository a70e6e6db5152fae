import {
  DASHBOARD_API_PATH,
  DASHBOARD_ROUTES,
  SESSION_USAGE_KEY,
  expressPath,
  routePrefixes,
} from '@signal/contracts';
import {
  AppError,
  type InternalTokenCache,
  bearerToken,
  idempotencyKeyOf,
  jsonBodyMiddleware,
  mountRoute,
  failureError,
  quotedForMessage,
  recordedStatus,
  valueOrThrow,
} from '@signal/service-kit';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { Plan } from '../../accounts/domain/records';
import { clientGroup } from '../../edge/domain/throttle';
import {
  createAccount,
  listApiKeysPage,
  renameApiKey,
  revokeApiKey,
} from '../../accounts/domain/accounts.use-cases';
import { createKeyOnce, type CreateKeyDeps } from '../../accounts/domain/create-key.use-case';
import { rollApiKeyOnce } from '../../accounts/domain/key-roll.use-case';
import { sendMadeOnce } from '../../accounts/http/account.router';
import {
  changePassword,
  passwordLogin,
  type PasswordLoginDeps,
} from '../../sessions/domain/password-login.use-case';
import { SESSION_COOKIE, type Session } from '../../sessions/domain/sessions';

import { verifiedSession } from '../../sessions/http/verified-session';
import {
  applyThrottle,
  countLogin,
  failedLogin,
  ipGuard,
  refuseCredential,
} from '../../edge/http/throttle.middleware';
import { setRateLimitHeaders } from '../../edge/http/rate-limit-headers';
import { outcomeOf } from '../../edge/domain/usage';
import type { RequestThrottle } from '../../edge/domain/throttle';
import type { UsageLedger } from '../../edge/domain/usage';
import { readCookie } from '../../http/cookies';
import { loginClientOf, setDeviceCookie } from '../../sessions/http/device-cookie';
import { proxyTo } from './session-proxy';
import type { OpenStreams } from '../../stream/domain/open-streams';
import { usageSummary } from '../domain/usage-summary.use-case';
import { admitSessionApiRequest, type SessionApiRequestDeps } from '../domain/session-api-request.use-case';
import type { StreamFeed } from '../../stream/http/stream-feed';
import { OWN_ROUTES_MAX_BODY_BYTES, type Upstream } from '../../http/upstream';

export interface DashboardApiDeps {
  /** The account use cases, and the shared limiter that also counts the session's requests. */
  accounts: CreateKeyDeps & SessionApiRequestDeps;
  logins: PasswordLoginDeps;
  usage: UsageLedger;
  signupEnabled: boolean;
  defaultPlan: Plan;
  /** Requests per minute one dashboard session may make (its own pages, not the API plan). */
  sessionThrottle: RequestThrottle;
  /** The per-address guard: anonymous requests and failed credentials. */
  addressGuard: RequestThrottle;
  /** Sign-up attempts per address (every attempt counts, whether it made an account or not). */
  signupThrottle: RequestThrottle;
  upstreams: { signals: Upstream; stats: Upstream; webhooks: Upstream };
  tokens: InternalTokenCache;
  upstreamTimeoutMs: number;
  maxHeldResponseBytes: number;
  /** Live streams open through this process. */
  streams: OpenStreams;
  streamIdleMs: number;
  /** The process's one subscription to the service's stream, which streams from now share. */
  feed: StreamFeed;
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function setSessionCookie(res: Response, token: string, maxAgeSeconds: number): void {
  res.append(
    'Set-Cookie',
    `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=${maxAgeSeconds}`,
  );
}

/** Cross-site requests are refused outright: browsers send Origin on every unsafe request. */
function sameOrigin(req: Request): boolean {
  const origin = req.header('origin');
  if (!origin) return true;
  try {
    return new URL(origin).host === req.header('host');
  } catch {
    return false;
  }
}

/** The refusal of a request from another site, naming the Origin it came with. */
const crossSite = (req: Request) =>
  new AppError(
    'FORBIDDEN',
    `Cross-site request refused: Origin "${quotedForMessage(req.header('origin') ?? '')}" is not this site.`,
  );

/** Sign-up and log-in come from the dashboard's own page, never from another site. */
const crossSiteRefused: RequestHandler = (req, _res, next) => {
  if (!sameOrigin(req)) throw crossSite(req);
  next();
};

const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('Cache-Control', 'no-store');
  next();
};

/**
 * The dashboard's API under /v1/dashboard (cookie session + CSRF token), and the public webhooks,
 * signals and stats routes reached with that session instead of an API key. API keys are refused
 * here: they can never manage keys.
 */
export function dashboardApiRouter(deps: DashboardApiDeps): Router {
  const router = Router();
  const sessions = deps.logins.sessions;
  const sessionOf = new WeakMap<Response, Session>();

  const session = (opts: { csrf: boolean }): RequestHandler => {
    return async (req, res, next) => {
      // A failed credential counts against the client's address, like a bad key.
      const refuse = (failure: AppError) => refuseCredential(deps.addressGuard, req, res, failure);
      try {
        if (bearerToken(req.header('authorization'))?.startsWith('sk_')) {
          throw await refuse(
            new AppError('FORBIDDEN', 'API keys cannot manage the account; use the dashboard.'),
          );
        }
        const token = readCookie(req.header('cookie'), SESSION_COOKIE);
        if (!token) throw await refuse(new AppError('UNAUTHORIZED', 'Log in to the dashboard first.'));
        const s = await verifiedSession(sessions, 'cookie', token, refuse);
        if (opts.csrf && UNSAFE.has(req.method)) {
          if (!sameOrigin(req)) throw await refuse(crossSite(req));
          if (!sessions.checkCsrf(s, req.header('x-csrf-token'))) {
            throw await refuse(
              new AppError('FORBIDDEN', 'Missing or invalid CSRF token; reload the dashboard.'),
            );
          }
        }
        const limited = applyThrottle(res, await deps.sessionThrottle.count(s.accountId));
        if (limited) throw limited;
        res.locals.accountId = s.accountId;
        sessionOf.set(res, await renew(res, s));
        next();
      } catch (err) {
        next(err);
      }
    };
  };
  /** Sliding sessions: a renewed session goes out as a new cookie and a new CSRF token in a header. */
  const renew = async (res: Response, s: Session): Promise<Session> => {
    const renewed = await sessions.renew(s).catch((cause: unknown) => {
      throw new AppError('SERVICE_UNAVAILABLE', undefined, { retryAfter: 1, cause });
    });
    if (!renewed) return s;
    setSessionCookie(res, renewed.token, sessions.ttlSeconds);
    res.setHeader('X-CSRF-Token', sessions.csrfToken(renewed.session));
    return renewed.session;
  };
  const current = (res: Response): Session => {
    const s = sessionOf.get(res);
    if (!s) throw new AppError('UNAUTHORIZED');
    return s;
  };

  const routes = DASHBOARD_ROUTES;
  const guard = ipGuard(deps.addressGuard);
  // Counted before the body is read: a malformed login or sign-up carries the headers too.
  router.post(expressPath(routes.dashboardLogin.path), countLogin(deps.addressGuard));
  router.post(expressPath(routes.dashboardSignup.path), ipGuard(deps.signupThrottle));
  router.use(DASHBOARD_API_PATH, noStore, ...jsonBodyMiddleware(OWN_ROUTES_MAX_BODY_BYTES));

  mountRoute(router, routes.dashboardConfig, [guard], (_input, _req, res) => {
    res.json({ success: true, data: { signup_enabled: deps.signupEnabled } });
  });

  const startSession = async (
    res: Response,
    accountId: string,
    status = 200,
    deviceCookie?: string,
    issuedAt = Date.now(),
  ) => {
    const { token, session: s } = sessions.issue('cookie', accountId, issuedAt);
    setSessionCookie(res, token, sessions.ttlSeconds);
    if (deviceCookie) setDeviceCookie(res, deviceCookie);
    const account = await deps.accounts.repository.findAccount(accountId);
    res.status(status).json({
      success: true,
      data: {
        account: account ? { id: account._id, email: account.email, plan: account.plan } : null,
        csrf_token: sessions.csrfToken(s),
        expires_at: new Date(s.expiresAt).toISOString(),
      },
    });
  };

  const signupOpen: RequestHandler = (_req, _res, next) => {
    if (!deps.signupEnabled)
      throw new AppError('FORBIDDEN', 'Sign-up is closed; ask the operator for an account.');
    next();
  };
  mountRoute(router, routes.dashboardSignup, [crossSiteRefused, signupOpen], async ({ body }, req, res) => {
    const account = valueOrThrow(
      await createAccount(
        deps.accounts,
        body.email,
        body.password,
        deps.defaultPlan,
        clientGroup(req.ip ?? ''),
      ),
    );
    // The browser that made the account is its own, as one that logged in is: it gets the device
    // cookie a login hands out, so a guesser of the password never locks it out.
    await startSession(res, account.id, 201, deps.logins.devices.issue(body.email));
  });

  mountRoute(router, routes.dashboardLogin, [crossSiteRefused], async ({ body }, req, res) => {
    const result = await passwordLogin(deps.logins, body.email, body.password, loginClientOf(req));
    if (!result.ok) throw failedLogin(res, failureError(result));
    const { accountId, deviceCookie, sessionIssuedAt } = result.value;
    await startSession(res, accountId, 200, deviceCookie, sessionIssuedAt);
  });

  // Every other path under the prefix, known or not, wants a session first.
  router.use(DASHBOARD_API_PATH, session({ csrf: true }));

  mountRoute(router, routes.dashboardSession, async (_input, _req, res) => {
    const s = current(res);
    const account = await deps.accounts.repository.findAccount(s.accountId);
    if (!account) throw new AppError('UNAUTHORIZED', 'This account no longer exists.');
    res.json({
      success: true,
      data: {
        account: { id: account._id, email: account.email, plan: account.plan },
        csrf_token: sessions.csrfToken(s),
        expires_at: new Date(s.expiresAt).toISOString(),
      },
    });
  });

  mountRoute(router, routes.dashboardLogout, async (_input, _req, res) => {
    await sessions.revoke(current(res)).catch((err: unknown) => {
      throw new AppError('SERVICE_UNAVAILABLE', undefined, { cause: err, retryAfter: 1 });
    });
    setSessionCookie(res, '', 0);
    res.json({ success: true, data: { logged_out: true } });
  });

  // Every session of the account ends (this browser gets a new one at once). A wrong current
  // password is the form's field error, not a 401: the dashboard reads a 401 as its session ended.
  mountRoute(router, routes.dashboardChangePassword, async ({ body }, _req, res) => {
    const asking = current(res);
    const result = await changePassword(deps.logins, asking, body.current_password, body.new_password);
    // A wrong current password names its field; an ended session does not, and stays a 401.
    if (!result.ok && result.code === 'UNAUTHORIZED' && result.details !== undefined)
      throw new AppError('VALIDATION_ERROR', result.message, { details: result.details });
    if (!result.ok) throw failureError(result);
    await startSession(res, asking.accountId);
  });

  mountRoute(router, routes.dashboardListKeys, async ({ query }, _req, res) => {
    const { data, meta } = await listApiKeysPage(deps.accounts, current(res).accountId, query);
    res.json({ success: true, data, meta });
  });

  mountRoute(router, routes.dashboardCreateKey, async ({ body }, req, res) => {
    const { created, replayed } = valueOrThrow(
      await createKeyOnce(deps.accounts, current(res).accountId, body, idempotencyKeyOf(req)),
    );
    sendMadeOnce(res, { value: created, replayed });
  });

  mountRoute(router, routes.dashboardRollKey, async ({ params, body }, req, res) => {
    const { rolled, replayed } = valueOrThrow(
      await rollApiKeyOnce(
        deps.accounts,
        current(res).accountId,
        params.key_id,
        body.overlap_seconds,
        idempotencyKeyOf(req),
      ),
    );
    sendMadeOnce(res, { value: rolled, replayed });
  });

  mountRoute(router, routes.dashboardRenameKey, async ({ params, body }, _req, res) => {
    const renamed = valueOrThrow(
      await renameApiKey(deps.accounts, current(res).accountId, params.key_id, body.name),
    );
    res.json({ success: true, data: renamed });
  });

  mountRoute(router, routes.dashboardRevokeKey, async ({ params }, _req, res) => {
    const revoked = valueOrThrow(await revokeApiKey(deps.accounts, current(res).accountId, params.key_id));
    res.json({ success: true, data: revoked });
  });

  mountRoute(router, routes.dashboardUsage, async ({ query }, _req, res) => {
    const summary = await usageSummary(
      { repository: deps.accounts.repository, usage: deps.usage, defaultPlan: deps.defaultPlan },
      current(res).accountId,
      query.key_id,
    );
    res.json({ success: true, data: valueOrThrow(summary) });
  });

  /**
   * The public routes reached with a session count against the account's plan (the session
   * throttle above guards the dashboard's own pages only) and in its usage, as the pseudo key
   * `dashboard`.
   */
  const accountPlan: RequestHandler = async (_req, res, next) => {
    try {
      const { accountId, expiresAt, sessionId, issuedAt } = current(res);
      const admitted = await admitSessionApiRequest(deps.accounts, accountId);
      const rate = admitted.ok ? admitted.value.rate : 'rate' in admitted ? admitted.rate : undefined;
      if (rate) {
        // Counted in the plan's windows (served or refused over the limit): in the usage too.
        setRateLimitHeaders(res, rate);
        // On 'close': a request whose client left first (499) was counted in the windows too.
        res.once('close', () =>
          deps.usage.count(accountId, SESSION_USAGE_KEY, outcomeOf(recordedStatus(res))),
        );
      }
      if (!admitted.ok) throw failureError(admitted);
      // What a live stream opened with this session needs: its plan's cap, and when it ends.
      res.locals.planCaps = admitted.value.caps;
      res.locals.credentialExpiresAt = expiresAt;
      res.locals.streamSession = { sessionId, issuedAt };
      next();
    } catch (err) {
      next(err);
    }
  };

  // The public routes with a dashboard session instead of an API key (no Authorization header).
  const viaSession = (upstream: Upstream): Router => {
    const r = Router();
    r.use((req, _res, next) => {
      if (req.header('authorization') || !readCookie(req.header('cookie'), SESSION_COOKIE))
        return next('router');
      next();
    });
    r.use(
      noStore,
      session({ csrf: true }),
      accountPlan,
      proxyTo(upstream, {
        tokens: deps.tokens,
        timeoutMs: deps.upstreamTimeoutMs,
        maxHeldBytes: deps.maxHeldResponseBytes,
        streams: deps.streams,
        streamIdleMs: deps.streamIdleMs,
        feed: deps.feed,
      }),
    );
    return r;
  };
  // The services' public paths, by the route table's owners.
  router.use(routePrefixes('webhooks'), viaSession(deps.upstreams.webhooks));
  router.use(routePrefixes('signals'), viaSession(deps.upstreams.signals));
  router.use(routePrefixes('stats'), viaSession(deps.upstreams.stats));
  return router;
}
