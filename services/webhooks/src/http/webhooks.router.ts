import type { KeyObject } from 'node:crypto';
import { ROUTES, methodNotAllowedRoutes, routePrefixes } from '@signal/contracts';
import {
  idempotencyKeyOf,
  mountRoute,
  requireInternalAuth,
  type InternalLimits,
  refuseOtherMethods,
  valueOrThrow,
} from '@signal/service-kit';
import { Router, type Response } from 'express';
import { createSubscription } from '../domain/create-subscription.use-case';
import type { Performed } from '../domain/perform-once';
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

/** An action's answer; a repeat of an Idempotency-Key's first request says so, with its status. */
function sendPerformed<T>(res: Response, status: number, { value, replayed }: Performed<T>): void {
  if (replayed) res.setHeader('Idempotent-Replayed', 'true');
  res.status(status).json({ success: true, data: value });
}

/**
 * Subscriptions API, reached only through the gateway; every lookup is scoped to the caller's
 * account. Each route is mounted from its entry in the route table, which gives its path, the
 * form of its ids (404 for any other) and the schemas of its query and body.
 */
export function webhooksRouter(deps: SubscriptionDeps, internalJwtKey: KeyObject): Router {
  const r = Router();
  r.use(routePrefixes('webhooks'), requireInternalAuth(internalJwtKey, 'webhooks'));

  mountRoute(r, ROUTES.createWebhook, async ({ body }, req, res) => {
    const { subscription, created } = valueOrThrow(
      await createSubscription(deps, account(res), body, idempotencyKeyOf(req), webhookLimit(res)),
    );
    res.setHeader('Cache-Control', 'no-store');
    // As for API keys: a replay says so, so a client can tell it from a first creation.
    if (!created) res.setHeader('Idempotent-Replayed', 'true');
    res.status(created ? 201 : 200).json({ success: true, data: subscription });
  });
  mountRoute(r, ROUTES.listWebhooks, async ({ query }, _req, res) => {
    const { data, meta } = await listSubscriptions(deps, account(res), query);
    res.json({ success: true, data, meta });
  });
  mountRoute(r, ROUTES.getWebhook, async ({ params }, _req, res) => {
    res.json({
      success: true,
      data: valueOrThrow(await getSubscription(deps, account(res), params.webhook_id)),
    });
  });
  mountRoute(r, ROUTES.updateWebhook, async ({ params, body }, _req, res) => {
    res.json({
      success: true,
      data: valueOrThrow(await updateSubscription(deps, account(res), params.webhook_id, body)),
    });
  });
  mountRoute(r, ROUTES.deleteWebhook, async ({ params }, _req, res) => {
    res.json({
      success: true,
      data: valueOrThrow(await deleteSubscription(deps, account(res), params.webhook_id)),
    });
  });
  mountRoute(r, ROUTES.rotateWebhookSecret, async ({ params }, req, res) => {
    const rotated = await rotateSecret(deps, account(res), params.webhook_id, idempotencyKeyOf(req));
    res.setHeader('Cache-Control', 'no-store');
    sendPerformed(res, 200, valueOrThrow(rotated));
  });
  mountRoute(r, ROUTES.sendWebhookTest, async ({ params, body }, req, res) => {
    sendPerformed(
      res,
      202,
      valueOrThrow(
        await sendTestEvent(deps, account(res), params.webhook_id, body.event, idempotencyKeyOf(req)),
      ),
    );
  });
  mountRoute(r, ROUTES.recoverWebhook, async ({ params, body }, req, res) => {
    // cursor: null (the last page's next_cursor) is no cursor.
    const input = { ...body, since: new Date(body.since), cursor: body.cursor ?? undefined };
    sendPerformed(
      res,
      202,
      valueOrThrow(
        await recoverDeliveries(deps, account(res), params.webhook_id, input, idempotencyKeyOf(req)),
      ),
    );
  });
  mountRoute(r, ROUTES.listWebhookDeliveries, async ({ params, query }, _req, res) => {
    const { data, meta } = valueOrThrow(await listDeliveries(deps, account(res), params.webhook_id, query));
    res.json({ success: true, data, meta });
  });
  mountRoute(r, ROUTES.getWebhookDelivery, async ({ params }, _req, res) => {
    res.json({
      success: true,
      data: valueOrThrow(await getDelivery(deps, account(res), params.webhook_id, params.delivery_id)),
    });
  });
  mountRoute(r, ROUTES.retryWebhookDelivery, async ({ params }, req, res) => {
    const { webhook_id, delivery_id } = params;
    sendPerformed(
      res,
      202,
      valueOrThrow(await retryDelivery(deps, account(res), webhook_id, delivery_id, idempotencyKeyOf(req))),
    );
  });
  // A known path with a method it does not take: 405 naming the ones it does (from the route table).
  refuseOtherMethods(r, methodNotAllowedRoutes('webhooks'));
  return r;
}
