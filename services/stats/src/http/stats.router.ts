import type { KeyObject } from 'node:crypto';
import { ROUTES, expressPath, methodNotAllowedRoutes } from '@signal/contracts';
import { AppError, parseOrThrow, requireInternalAuth } from '@signal/service-kit';
import { Router } from 'express';
import { getStats, type StatsReadDeps } from '../domain/get-stats.use-case';

export function statsRouter(reads: StatsReadDeps, internalJwtKey: KeyObject): Router {
  const router = Router();
  router.use('/v1/stats', requireInternalAuth(internalJwtKey, 'stats'));
  router.get(expressPath(ROUTES.getStats.path), async (req, res) => {
    const query = parseOrThrow(ROUTES.getStats.query, req.query, 'query');
    res.json({ success: true, data: await getStats(reads, query) });
  });
  for (const { path, allow } of methodNotAllowedRoutes('stats')) {
    router.all(path, (req) => {
      throw new AppError('METHOD_NOT_ALLOWED', `${req.method} is not allowed here; use ${allow}.`, {
        headers: { Allow: allow },
      });
    });
  }
  return router;
}
