import {
  bulkCreateSignalsInputSchema,
  changeStatusInputSchema,
  createSignalInputSchema,
  updateSignalInputSchema,
  wholeNumberParam,
} from '@signal/contracts';
import { idempotencyKeyOf, parseOrThrow, requireStaticToken, valueOrThrow } from '@signal/service-kit';
import { Router } from 'express';
import { z } from 'zod';
import type { SignalSource, SignalWriteStore, WriteEffects } from '../domain/ports';
import { exportSignals } from '../domain/export-signals.use-case';
import { bulkCreateSignals, createSignal } from '../domain/create-signal.use-case';
import { changeSignalStatus, updateSignal } from '../domain/update-signal.use-case';

const exportQuerySchema = z.strictObject({
  after: z.string().max(64).optional(),
  limit: wholeNumberParam('limit', 1, 5000).optional(),
});

/**
 * Ingestion: never routed by the gateway, guarded by its own credential. Every write
 * carries its event in the same atomic write (outbox) and then nudges the relay.
 */
export function ingestRouter(
  repository: SignalWriteStore & SignalSource,
  effects: WriteEffects,
  ingestToken: string,
): Router {
  const router = Router();
  router.use('/internal', requireStaticToken(ingestToken));

  router.post('/internal/signals', async (req, res) => {
    const input = parseOrThrow(createSignalInputSchema, req.body, 'body');
    const { signal, created } = valueOrThrow(
      await createSignal(repository, effects, input, idempotencyKeyOf(req)),
    );
    res.status(created ? 201 : 200).json({ success: true, data: signal });
  });

  router.post('/internal/signals/bulk', async (req, res) => {
    const { signals } = parseOrThrow(bulkCreateSignalsInputSchema, req.body, 'body');
    const { replayed, ...summary } = valueOrThrow(
      await bulkCreateSignals(repository, effects, signals, idempotencyKeyOf(req)),
    );
    res.status(replayed ? 200 : 201).json({ success: true, data: summary });
  });

  router.patch('/internal/signals/:signalId', async (req, res) => {
    const patch = parseOrThrow(updateSignalInputSchema, req.body, 'body');
    const data = valueOrThrow(await updateSignal(repository, effects, req.params.signalId, patch));
    res.json({ success: true, data });
  });

  router.post('/internal/signals/:signalId/status', async (req, res) => {
    const { status } = parseOrThrow(changeStatusInputSchema, req.body, 'body');
    const data = valueOrThrow(await changeSignalStatus(repository, effects, req.params.signalId, status));
    res.json({ success: true, data });
  });

  /** Paged export in id order for projections that rebuild themselves (stats). */
  router.get('/internal/signals/export', async (req, res) => {
    const query = parseOrThrow(exportQuerySchema, req.query, 'query');
    const { data, next_after } = await exportSignals(repository, query.after, query.limit);
    res.json({ success: true, data, meta: { next_after } });
  });
  return router;
}
