import { statsQuerySchema } from '@signal/contracts';
import { parseOrThrow, requireInternalAuth } from '@signal/service-kit';
import { Router } from 'express';
import type { ProjectionRepository } from '../data/projection.repository';
import { getStats } from '../domain/get-stats.use-case';
import type { StatsCache } from '../domain/stats-cache';

export function statsRouter(repository: ProjectionRepository, cache: StatsCache, jwtSecret: string): Router {
  const router = Router();
  router.use('/v1/stats', requireInternalAuth(jwtSecret, 'stats'));
  router.get('/v1/stats', async (req, res) => {
    const query = parseOrThrow(statsQuerySchema, req.query, 'query');
    res.json({ success: true, data: await getStats(repository, cache, query) });
  });
  return router;
}
