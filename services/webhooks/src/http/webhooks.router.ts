import {
  createWebhookInputSchema,
  deliveryListQuerySchema,
  updateWebhookInputSchema,
} from '@signal/contracts';
import { parseOrThrow, requireInternalAuth } from '@signal/service-kit';
import { Router, type Response } from 'express';
import * as uc from '../domain/subscriptions.use-cases';

const account = (res: Response) => res.locals.accountId as string;

/** Subscriptions API, reached only through the gateway; every lookup is scoped to the caller's account. */
export function webhooksRouter(deps: uc.SubscriptionDeps, jwtSecret: string): Router {
  const r = Router();
  r.use('/v1/webhooks', requireInternalAuth(jwtSecret, 'webhooks'));

  r.post('/v1/webhooks', async (req, res) => {
    const input = parseOrThrow(createWebhookInputSchema, req.body ?? {}, 'body');
    res.status(201).json({ success: true, data: await uc.createSubscription(deps, account(res), input) });
  });
  r.get('/v1/webhooks', async (_req, res) => {
    res.json({ success: true, data: await uc.listSubscriptions(deps, account(res)) });
  });
  r.get('/v1/webhooks/:id', async (req, res) => {
    res.json({ success: true, data: await uc.getSubscription(deps, account(res), req.params.id!) });
  });
  r.patch('/v1/webhooks/:id', async (req, res) => {
    const input = parseOrThrow(updateWebhookInputSchema, req.body ?? {}, 'body');
    res.json({ success: true, data: await uc.updateSubscription(deps, account(res), req.params.id!, input) });
  });
  r.delete('/v1/webhooks/:id', async (req, res) => {
    res.json({ success: true, data: await uc.deleteSubscription(deps, account(res), req.params.id!) });
  });
  r.post('/v1/webhooks/:id/rotate-secret', async (req, res) => {
    res.json({ success: true, data: await uc.rotateSecret(deps, account(res), req.params.id!) });
  });
  r.post('/v1/webhooks/:id/test', async (req, res) => {
    res.status(202).json({ success: true, data: await uc.sendTestEvent(deps, account(res), req.params.id!) });
  });
  r.get('/v1/webhooks/:id/deliveries', async (req, res) => {
    const q = parseOrThrow(deliveryListQuerySchema, req.query, 'query');
    const { data, meta } = await uc.listDeliveries(deps, account(res), req.params.id!, q);
    res.json({ success: true, data, meta });
  });
  r.get('/v1/webhooks/:id/deliveries/:deliveryId', async (req, res) => {
    res.json({
      success: true,
      data: await uc.getDelivery(deps, account(res), req.params.id!, req.params.deliveryId!),
    });
  });
  r.post('/v1/webhooks/:id/deliveries/:deliveryId/retry', async (req, res) => {
    res.status(202).json({
      success: true,
      data: await uc.retryDelivery(deps, account(res), req.params.id!, req.params.deliveryId!),
    });
  });
  return r;
}
