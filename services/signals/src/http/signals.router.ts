import { signalListQuerySchema } from '@signal/contracts';
import { parseOrThrow, requireInternalAuth } from '@signal/service-kit';
import { Router } from 'express';
import type { SignalRepository } from '../data/signal.repository';
import { getSignal } from '../domain/get-signal.use-case';
import { listSignals } from '../domain/list-signals.use-case';

/** Public reads, reached only through the gateway (internal JWT for audience `signals`). */
export function signalsRouter(repository: SignalRepository, jwtSecret: string): Router {
  const router = Router();
  router.use('/v1/signals', requireInternalAuth(jwtSecret, 'signals'));

  router.get('/v1/signals', async (req, res) => {
    const query = parseOrThrow(signalListQuerySchema, req.query, 'query');
    const { data, meta } = await listSignals(repository, query);
    res.json({ success: true, data, meta });
  });

  router.get('/v1/signals/:signalId', async (req, res) => {
    const data = await getSignal(repository, req.params.signalId);
    res.json({ success: true, data });
  });
  return router;
}
