import { createApiKeyInputSchema, loginInputSchema } from '@signal/contracts';
import { AppError, bearerToken, jsonBodyMiddleware, parseOrThrow } from '@signal/service-kit';
import { Router, type RequestHandler } from 'express';
import {
  createApiKey,
  listApiKeys,
  login,
  revokeApiKey,
  verifySession,
  type AccountDeps,
} from '../domain/accounts.use-cases';

function requireSession(secret: string): RequestHandler {
  return (req, res, next) => {
    const token = bearerToken(req.header('authorization'));
    if (!token)
      return next(new AppError('UNAUTHORIZED', 'A dashboard session is required: POST /v1/auth/login.'));
    if (token.startsWith('sk_'))
      return next(new AppError('FORBIDDEN', 'API keys cannot manage API keys; use a dashboard session.'));
    res.locals.accountId = verifySession(secret, token);
    next();
  };
}

/** The dashboard's API: log in, then manage this account's keys (never another account's). */
export function accountRouter(
  deps: AccountDeps,
  sessionSecret: string,
  sessionTtlSeconds: number,
  guard: RequestHandler,
): Router {
  const router = Router();
  router.use(['/v1/auth', '/v1/account'], guard, ...jsonBodyMiddleware('16kb'));

  router.post('/v1/auth/login', async (req, res) => {
    const { email, password } = parseOrThrow(loginInputSchema, req.body ?? {}, 'body');
    res.json({ success: true, data: await login(deps, sessionSecret, sessionTtlSeconds, email, password) });
  });

  router.use('/v1/account', requireSession(sessionSecret));
  router.get('/v1/account/keys', async (_req, res) => {
    res.json({ success: true, data: await listApiKeys(deps, res.locals.accountId as string) });
  });
  router.post('/v1/account/keys', async (req, res) => {
    const input = parseOrThrow(createApiKeyInputSchema, req.body ?? {}, 'body');
    const created = await createApiKey(
      deps,
      res.locals.accountId as string,
      input.name,
      input.expires_at ? new Date(input.expires_at) : undefined,
    );
    res.status(201).json({ success: true, data: created });
  });
  router.delete('/v1/account/keys/:keyId', async (req, res) => {
    res.json({
      success: true,
      data: await revokeApiKey(deps, res.locals.accountId as string, req.params.keyId!),
    });
  });
  return router;
}
