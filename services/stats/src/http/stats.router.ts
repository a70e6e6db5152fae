import type { KeyObject } from 'node:crypto';
import { ROUTES, methodNotAllowedRoutes, routePrefixes } from '@signal/contracts';
import { mountRoute, requireInternalAuth, refuseOtherMethods, valueOrThrow } from '@signal/service-kit';
import { Router } from 'express';
import { getStats, type StatsReadDeps } from '../domain/get-stats.use-case';

export function statsRouter(reads: StatsReadDeps, internalJwtKey: KeyObject): Router {
  const router = Router();
  router.use(routePrefixes('stats'), requireInternalAuth(internalJwtKey, 'stats'));
  mountRoute(router, ROUTES.getStats, async ({ query }, _req, res) => {
    res.json({ success: true, data: valueOrThrow(await getStats(reads, query)) });
  });
  refuseOtherMethods(router, methodNotAllowedRoutes('stats'));
  return router;
}
