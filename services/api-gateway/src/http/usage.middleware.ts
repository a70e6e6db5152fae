import type { Logger } from '@signal/service-kit';
import type { RequestHandler } from 'express';
import { hashApiKey, isWellFormedApiKey } from '../domain/api-key';
import type { AuthDeps } from '../domain/authenticate.use-case';
import { outcomeOf, type UsageStore } from '../domain/usage';

/**
 * Counts every API-key request by outcome once its response has finished (off the hot path).
 * Requests refused before authentication finished (401 for a revoked or expired key, 429) are
 * attributed through the key's hash; keys nobody owns are not counted anywhere.
 */
export function usageRecorder(usage: UsageStore, auth: AuthDeps, logger: Logger): RequestHandler {
  return (req, res, next) => {
    const header = req.header('authorization');
    if (!header) return next();
    res.once('finish', () => {
      const outcome = outcomeOf(res.statusCode);
      const accountId: unknown = res.locals.accountId;
      const keyId: unknown = res.locals.keyId;
      const attribute = async (): Promise<{ accountId: string; keyId: string } | undefined> => {
        if (typeof accountId === 'string' && typeof keyId === 'string') return { accountId, keyId };
        if (outcome !== 'unauthorized' && outcome !== 'rate_limited') return undefined;
        const key = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
        if (!key || !isWellFormedApiKey(key)) return undefined;
        const hash = hashApiKey(key, auth.pepper);
        const cached = auth.cache.get(hash);
        if (cached) return { accountId: cached.accountId, keyId: cached.keyId };
        const doc = await auth.repository.findKeyByHash(hash);
        return doc ? { accountId: doc.account_id, keyId: doc._id } : undefined;
      };
      attribute()
        .then((who) => (who ? usage.record(who.accountId, who.keyId, outcome) : undefined))
        .catch((err: Error) => logger.warn({ err: err.message }, 'usage not recorded'));
    });
    next();
  };
}
