import {
  ROUTES,
  expressPath,
  methodNotAllowedRoutes,
  pathPrefix,
  routeName,
  routePrefixes,
} from '@signal/contracts';
import {
  AppError,
  bearerToken,
  failureError,
  idempotencyKeyOf,
  jsonBodyMiddleware,
  mountRoute,
  refuseOtherMethods,
  valueOrThrow,
} from '@signal/service-kit';
import { Router, type RequestHandler, type Response } from 'express';
import { listApiKeysPage, renameApiKey, revokeApiKey } from '../domain/accounts.use-cases';
import { createKeyOnce, type CreateKeyDeps } from '../domain/create-key.use-case';
import { rollApiKeyOnce } from '../domain/key-roll.use-case';
import {
  changePassword,
  passwordLogin,
  type PasswordLoginDeps,
} from '../../sessions/domain/password-login.use-case';
import type { Session } from '../../sessions/domain/sessions';
import { loginClientOf, setDeviceCookie } from '../../sessions/http/device-cookie';

import type { RequestThrottle } from '../../edge/domain/throttle';
import { verifiedSession } from '../../sessions/http/verified-session';
import {
  applyThrottle,
  countLogin,
  failedLogin,
  refuseCredential,
} from '../../edge/http/throttle.middleware';
import { OWN_ROUTES_MAX_BODY_BYTES } from '../../http/upstream';

const sessionOf = new WeakMap<Response, Session>();

function current(res: Response): Session {
  const s = sessionOf.get(res);
  if (!s) throw new AppError('UNAUTHORIZED');
  return s;
}

/**
 * Bearer session tokens from POST /v1/auth/login; API keys are refused (they never manage keys).
 * A failed session counts against its address (the guard); a valid one against its account's
 * session throttle, which gives its rate-limit headers.
 */
function requireSession(
  deps: PasswordLoginDeps,
  guard: RequestThrottle,
  sessionThrottle: RequestThrottle,
): RequestHandler {
  return async (req, res, next) => {
    try {
      const token = bearerToken(req.header('authorization'));
      if (!token)
        throw await refuseCredential(
          guard,
          req,
          res,
          new AppError('UNAUTHORIZED', `A dashboard session is required: ${routeName(ROUTES.login)}.`),
        );
      if (token.startsWith('sk_'))
        throw await refuseCredential(
          guard,
          req,
          res,
          new AppError(
            'FORBIDDEN',
            'API keys cannot manage the account (keys, password, sessions); use a dashboard session.',
          ),
        );
      const session = await verifiedSession(deps.sessions, 'api', token, (failure) =>
        refuseCredential(guard, req, res, failure),
      );
      const limited = applyThrottle(res, await sessionThrottle.count(session.accountId));
      if (limited) throw limited;
      sessionOf.set(res, session);
      next();
    } catch (err) {
      next(err);
    }
  };
}

const sessionBody = (token: string, s: Session) => ({
  token,
  expires_at: new Date(s.expiresAt).toISOString(),
});

/**
 * The answer to a create or a roll made once per Idempotency-Key: 201 with what it made, or 200
 * with `Idempotent-Replayed: true` when a repeat found what the first request made.
 */
export function sendMadeOnce(res: Response, made: { value: unknown; replayed: boolean }): void {
  if (made.replayed) res.setHeader('Idempotent-Replayed', 'true');
  res.status(made.replayed ? 200 : 201).json({ success: true, data: made.value });
}

/** Accounts by API (for scripts): log in and out, change the password, manage this account's keys. */
export function accountRouter(
  accounts: CreateKeyDeps,
  logins: PasswordLoginDeps,
  guard: RequestThrottle,
  sessionThrottle: RequestThrottle,
): Router {
  const router = Router();
  const session = requireSession(logins, guard, sessionThrottle);
  // Counted before the body is read: a malformed login carries the headers too.
  router.use(expressPath(ROUTES.login.path), countLogin(guard));
  router.use(routePrefixes('gateway'), ...jsonBodyMiddleware(OWN_ROUTES_MAX_BODY_BYTES));

  mountRoute(router, ROUTES.login, async ({ body: { email, password } }, req, res) => {
    const result = await passwordLogin(logins, email, password, loginClientOf(req));
    if (!result.ok) throw failedLogin(res, failureError(result));
    setDeviceCookie(res, result.value.deviceCookie);
    const { token, session } = logins.sessions.issue(
      'api',
      result.value.accountId,
      result.value.sessionIssuedAt,
    );
    res.json({ success: true, data: sessionBody(token, session) });
  });

  mountRoute(router, ROUTES.logout, [session], async (_input, _req, res) => {
    await logins.sessions.revoke(current(res)).catch((err: unknown) => {
      throw new AppError('SERVICE_UNAVAILABLE', undefined, { cause: err, retryAfter: 1 });
    });
    res.json({ success: true, data: { logged_out: true } });
  });

  // Every account path, known or not, wants a session first (so a wrong method is a 401 too).
  router.use(pathPrefix(ROUTES.changePassword.path), session);

  mountRoute(router, ROUTES.changePassword, async ({ body }, _req, res) => {
    const asking = current(res);
    const result = await changePassword(logins, asking, body.current_password, body.new_password);
    if (!result.ok) throw failedLogin(res, failureError(result));
    const { token, session } = logins.sessions.issue('api', asking.accountId);
    res.json({ success: true, data: sessionBody(token, session) });
  });

  mountRoute(router, ROUTES.listApiKeys, async ({ query }, _req, res) => {
    const { data, meta } = await listApiKeysPage(accounts, current(res).accountId, query);
    res.json({ success: true, data, meta });
  });
  mountRoute(router, ROUTES.createApiKey, async ({ body }, req, res) => {
    const { created, replayed } = valueOrThrow(
      await createKeyOnce(accounts, current(res).accountId, body, idempotencyKeyOf(req)),
    );
    sendMadeOnce(res, { value: created, replayed });
  });
  mountRoute(router, ROUTES.rollApiKey, async ({ params, body }, req, res) => {
    const { rolled, replayed } = valueOrThrow(
      await rollApiKeyOnce(
        accounts,
        current(res).accountId,
        params.key_id,
        body.overlap_seconds,
        idempotencyKeyOf(req),
      ),
    );
    sendMadeOnce(res, { value: rolled, replayed });
  });
  mountRoute(router, ROUTES.renameApiKey, async ({ params, body }, _req, res) => {
    res.json({
      success: true,
      data: valueOrThrow(await renameApiKey(accounts, current(res).accountId, params.key_id, body.name)),
    });
  });
  mountRoute(router, ROUTES.revokeApiKey, async ({ params }, _req, res) => {
    res.json({
      success: true,
      data: valueOrThrow(await revokeApiKey(accounts, current(res).accountId, params.key_id)),
    });
  });
  // A known path with a method it does not take: 405 naming the ones it does (from the route table).
  refuseOtherMethods(router, methodNotAllowedRoutes('gateway'));
  return router;
}
