import type { KeyObject } from 'node:crypto';
import { ROUTES, expressPath, methodNotAllowedRoutes } from '@signal/contracts';
import { parseOrThrow, requireInternalAuth, refuseOtherMethods, valueOrThrow } from '@signal/service-kit';
import { Router } from 'express';
import { getStats, type StatsReadDeps } from '../domain/get-stats.use-case';

export function statsRouter(reads: StatsReadDeps, internalJwtKey: KeyObject): Router {
  const router = Router();
  router.use('/v1/stats', requireInternalAuth(internalJwtKey, 'stats'));
  router.get(expressPath(ROUTES.getStats.path), async (req, res) => {
    const query = parseOrThrow(ROUTES.getStats.query, req.query, 'query');
    res.json({ success: true, data: valueOrThrow(await getStats(reads, query)) });
  });
  refuseOtherMethods(router, methodNotAllowedRoutes('stats'));
  return router;
}
