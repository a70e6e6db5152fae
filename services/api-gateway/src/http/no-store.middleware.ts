import type { RequestHandler } from 'express';

/** Answers that may carry a secret (session tokens, API keys, webhook signing secrets) are never stored by any cache. */
const SECRET_BEARING = [
  /^\/v1\/auth(\/|$)/,
  /^\/v1\/account(\/|$)/,
  /^\/v1\/dashboard(\/|$)/,
  /^\/v1\/webhooks\/?$/,
  /^\/v1\/webhooks\/[^/]+\/rotate-secret\/?$/,
];

export function noStoreForSecrets(): RequestHandler {
  return (req, res, next) => {
    if (SECRET_BEARING.some((re) => re.test(req.path))) res.setHeader('Cache-Control', 'no-store');
    next();
  };
}
