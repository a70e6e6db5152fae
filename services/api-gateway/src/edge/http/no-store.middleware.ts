import type { RequestHandler } from 'express';

/** Responses that may carry a secret (session tokens, API keys, webhook signing secrets). */
const SECRET_BEARING = [
  /^\/v1\/auth(\/|$)/i,
  /^\/v1\/account(\/|$)/i,
  /^\/v1\/dashboard(\/|$)/i,
  /^\/v1\/webhooks\/?$/i,
  /^\/v1\/webhooks\/[^/]+\/rotate-secret\/?$/i,
];

export const carriesSecrets = (path: string): boolean => SECRET_BEARING.some((re) => re.test(path));

/** …are never stored by any cache. */
export function noStoreForSecrets(): RequestHandler {
  return (req, res, next) => {
    if (carriesSecrets(req.path)) res.setHeader('Cache-Control', 'no-store');
    next();
  };
}
