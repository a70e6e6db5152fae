import type { KeyObject } from 'node:crypto';
import { ROUTES, expressPath, methodNotAllowedRoutes } from '@signal/contracts';
import { parseOrThrow, requireInternalAuth, refuseOtherMethods, valueOrThrow } from '@signal/service-kit';
import { Router } from 'express';
import { getSignal } from '../domain/get-signal.use-case';
import { listSignals, type ListDeps } from '../domain/list-signals.use-case';
import type { StreamDeps } from '../domain/open-stream.use-case';
import { streamHandler } from './stream.router';

/** Public reads, reached only through the gateway (internal JWT for audience `signals`). */
export function signalsRouter(reads: ListDeps, internalJwtKey: KeyObject, streams: StreamDeps): Router {
  const router = Router();
  router.use('/v1/signals', requireInternalAuth(internalJwtKey, 'signals'));

  router.get(expressPath(ROUTES.listSignals.path), async (req, res) => {
    const query = parseOrThrow(ROUTES.listSignals.query, req.query, 'query');
    const { data, meta } = valueOrThrow(await listSignals(reads, query));
    res.json({ success: true, data, meta });
  });

  // Before `/:signal_id`, which would take `stream` for an id.
  router.get(expressPath(ROUTES.streamSignals.path), streamHandler(streams));

  router.get(expressPath(ROUTES.getSignal.path), async (req, res) => {
    const data = valueOrThrow(await getSignal(reads, String(req.params.signal_id)));
    res.json({ success: true, data });
  });
  refuseOtherMethods(router, methodNotAllowedRoutes('signals'));
  return router;
}
