import type { KeyObject } from 'node:crypto';
import {
  ROUTES,
  deliveryIdSchema,
  methodNotAllowedRoutes,
  recoverWebhookInputSchema,
  webhookIdSchema,
  webhookTestInputSchema,
} from '@signal/contracts';
import {
  AppError,
  idempotencyKeyOf,
  parseOrThrow,
  requireInternalAuth,
  type InternalLimits,
  refuseOtherMethods,
  valueOrThrow,
} from '@signal/service-kit';
import { Router, type Response } from 'express';
import { createSubscription } from '../domain/create-subscription.use-case';
import { deleteSubscription } from '../domain/delete-subscription.use-case';
import { getDelivery, listDeliveries } from '../domain/read-deliveries.use-cases';
import { getSubscription, listSubscriptions } from '../domain/read-subscriptions.use-cases';
import { recoverDeliveries, retryDelivery } from '../domain/attempt-now.use-cases';
import { rotateSecret } from '../domain/rotate-secret.use-case';
import { sendTestEvent } from '../domain/send-test-event.use-case';
import type { SubscriptionDeps } from '../domain/subscription-rules';
import { updateSubscription } from '../domain/update-subscription.use-case';

const account = (res: Response) => res.locals.accountId as string;
/** The plan's subscription limit the gateway put in its token, if any. */
const webhookLimit = (res: Response): number | undefined => (res.locals.limits as InternalLimits).webhooks;

/** Subscriptions API, reached only through the gateway; every lookup is scoped to the caller's account. */
export function webhooksRouter(deps: SubscriptionDeps, internalJwtKey: KeyObject): Router {
  const r = Router();
  r.use('/v1/webhooks', requireInternalAuth(internalJwtKey, 'webhooks'));

  // Ids that cannot exist get a 404 before any store lookup (`%00`, overlong, other prefixes).
  r.param('id', (_req, _res, next, value: string) =>
    next(
      webhookIdSchema.safeParse(value).success ? undefined : new AppError('NOT_FOUND', 'Webhook not found.'),
    ),
  );
  r.param('deliveryId', (_req, _res, next, value: string) =>
    next(
      deliveryIdSchema.safeParse(value).success
        ? undefined
        : new AppError('NOT_FOUND', 'Delivery not found.'),
    ),
  );

  r.post('/v1/webhooks', async (req, res) => {
    const input = parseOrThrow(ROUTES.createWebhook.body, req.body ?? {}, 'body');
    const { subscription, created } = valueOrThrow(
      await createSubscription(deps, account(res), input, idempotencyKeyOf(req), webhookLimit(res)),
    );
    res.setHeader('Cache-Control', 'no-store');
    // As for API keys: a replay says so, so a client can tell it from a first creation.
    if (!created) res.setHeader('Idempotent-Replayed', 'true');
    res.status(created ? 201 : 200).json({ success: true, data: subscription });
  });
  r.get('/v1/webhooks', async (req, res) => {
    const q = parseOrThrow(ROUTES.listWebhooks.query, req.query, 'query');
    const { data, meta } = await listSubscriptions(deps, account(res), q);
    res.json({ success: true, data, meta });
  });
  r.get('/v1/webhooks/:id', async (req, res) => {
    res.json({
      success: true,
      data: valueOrThrow(await getSubscription(deps, account(res), req.params.id!)),
    });
  });
  r.patch('/v1/webhooks/:id', async (req, res) => {
    const input = parseOrThrow(ROUTES.updateWebhook.body, req.body ?? {}, 'body');
    res.json({
      success: true,
      data: valueOrThrow(await updateSubscription(deps, account(res), req.params.id!, input)),
    });
  });
  r.delete('/v1/webhooks/:id', async (req, res) => {
    res.json({
      success: true,
      data: valueOrThrow(await deleteSubscription(deps, account(res), req.params.id!)),
    });
  });
  r.post('/v1/webhooks/:id/rotate-secret', async (req, res) => {
    res.json({ success: true, data: valueOrThrow(await rotateSecret(deps, account(res), req.params.id!)) });
  });
  r.post('/v1/webhooks/:id/test', async (req, res) => {
    const input = parseOrThrow(webhookTestInputSchema, req.body ?? {}, 'body');
    res.status(202).json({
      success: true,
      data: valueOrThrow(await sendTestEvent(deps, account(res), req.params.id!, input.event)),
    });
  });
  r.post('/v1/webhooks/:id/recover', async (req, res) => {
    const input = parseOrThrow(recoverWebhookInputSchema, req.body ?? {}, 'body');
    res.status(202).json({
      success: true,
      data: valueOrThrow(
        await recoverDeliveries(deps, account(res), req.params.id!, {
          ...input,
          since: new Date(input.since),
        }),
      ),
    });
  });
  r.get('/v1/webhooks/:id/deliveries', async (req, res) => {
    const q = parseOrThrow(ROUTES.listWebhookDeliveries.query, req.query, 'query');
    const { data, meta } = valueOrThrow(await listDeliveries(deps, account(res), req.params.id!, q));
    res.json({ success: true, data, meta });
  });
  r.get('/v1/webhooks/:id/deliveries/:deliveryId', async (req, res) => {
    res.json({
      success: true,
      data: valueOrThrow(await getDelivery(deps, account(res), req.params.id!, req.params.deliveryId!)),
    });
  });
  r.post('/v1/webhooks/:id/deliveries/:deliveryId/retry', async (req, res) => {
    res.status(202).json({
      success: true,
      data: valueOrThrow(await retryDelivery(deps, account(res), req.params.id!, req.params.deliveryId!)),
    });
  });
  // A known path with a method it does not take: 405 naming the ones it does (from the route table).
  refuseOtherMethods(r, methodNotAllowedRoutes('webhooks'));
  return r;
}
