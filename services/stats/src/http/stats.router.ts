import type { KeyObject } from 'node:crypto';
import { statsQuerySchema } from '@signal/contracts';
import { parseOrThrow, requireInternalAuth } from '@signal/service-kit';
import { Router } from 'express';
import { getStats, type StatsReadDeps } from '../domain/get-stats.use-case';

export function statsRouter(reads: StatsReadDeps, internalJwtKey: KeyObject): Router {
  const router = Router();
  router.use('/v1/stats', requireInternalAuth(internalJwtKey, 'stats'));
  router.get('/v1/stats', async (req, res) => {
    const query = parseOrThrow(statsQuerySchema, req.query, 'query');
    res.json({ success: true, data: await getStats(reads, query) });
  });
  return router;
}
