import type { RequestHandler } from 'express';

/**
 * Responses that may carry a secret (session tokens, API keys, webhook signing secrets): under
 * /v1/auth, /v1/account and /v1/dashboard, the webhook list (a new subscription's secret) and a
 * subscription's rotate-secret. One expression: every API request is tested against it.
 */
const SECRET_BEARING =
  /^\/v1\/(?:(?:auth|account|dashboard)(?:\/|$)|webhooks(?:\/?|\/[^/]+\/rotate-secret\/?)$)/i;

export const carriesSecrets = (path: string): boolean => SECRET_BEARING.test(path);

/** …are never stored by any cache. */
export function noStoreForSecrets(): RequestHandler {
  return (req, res, next) => {
    if (carriesSecrets(req.path)) res.setHeader('Cache-Control', 'no-store');
    next();
  };
}
