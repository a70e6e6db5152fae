import type { KeyObject } from 'node:crypto';
import { ROUTES, expressPath, methodNotAllowedRoutes, routePrefixes } from '@signal/contracts';
import { mountRoute, requireInternalAuth, refuseOtherMethods, valueOrThrow } from '@signal/service-kit';
import { Router } from 'express';
import { getSignal } from '../domain/get-signal.use-case';
import { listSignals, type ListDeps } from '../domain/list-signals.use-case';
import type { StreamDeps } from '../domain/open-stream.use-case';
import { streamHandler } from './stream.router';

/** Public reads, reached only through the gateway (internal JWT for audience `signals`). */
export function signalsRouter(reads: ListDeps, internalJwtKey: KeyObject, streams: StreamDeps): Router {
  const router = Router();
  router.use(routePrefixes('signals'), requireInternalAuth(internalJwtKey, 'signals'));

  mountRoute(router, ROUTES.listSignals, async ({ query }, _req, res) => {
    const { data, meta } = valueOrThrow(await listSignals(reads, query));
    res.json({ success: true, data, meta });
  });

  // Before `/:signal_id`, which would take `stream` for an id. Not from the entry's query schema:
  // the stream reads the gateway's form of its query (signalStreamInternalQuerySchema).
  router.get(expressPath(ROUTES.streamSignals.path), streamHandler(streams));

  mountRoute(router, ROUTES.getSignal, async ({ params }, _req, res) => {
    const data = valueOrThrow(await getSignal(reads, params.signal_id));
    res.json({ success: true, data });
  });
  refuseOtherMethods(router, methodNotAllowedRoutes('signals'));
  return router;
}
