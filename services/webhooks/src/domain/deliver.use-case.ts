import { isIP } from 'node:net';
import { DUE_TOLERANCE_MS, type WebhookDeliveryJob } from '@signal/contracts';
import { currentTraceId, metrics, type Logger } from '@signal/service-kit';
import type {
  AttemptRecord,
  AttemptRequest,
  AttemptResponse,
  DeliveryDocument,
  DeliveryLogEntry,
  DeliveryStatus,
  SubscriptionDocument,
} from './records';
import type { DeliverySlots } from './concurrency';
import { parseRetryAfter, retryDelayMs, type ScheduleJob } from './delivery-jobs';
import { attemptSeq, logEntryId } from './delivery-state';
import type { DeliveryLogWriter, ReceiverClient, SubscriptionLookup } from './ports';
import { signatureHeaders } from './signing';
import { addressProblem, type GuardPolicy } from './url-guard';

export interface DeliverDeps {
  log: DeliveryLogWriter;
  /** Only for jobs of an older producer, which carry no body. */
  findDelivery(id: string): Promise<DeliveryDocument | null>;
  disableSubscription(id: string, reason: string): Promise<void>;
  subscriptions: SubscriptionLookup;
  receivers: ReceiverClient;
  schedule: ScheduleJob;
  logger: Logger;
  /** Per-account share and per-subscription cap of attempts in flight. */
  slots: DeliverySlots;
  retryDelaysMs: number[];
  timeoutMs: number;
  maxResponseBytes: number;
  maxRetryAfterMs: number;
  guard: GuardPolicy;
}

interface PostResult {
  statusCode: number | null;
  error: string | null;
  retryAfterMs?: number;
  /** null when nothing was sent (an address the URL guard refuses before connecting). */
  request: AttemptRequest | null;
  response: AttemptResponse | null;
}

async function post(
  deps: DeliverDeps,
  sub: SubscriptionDocument,
  deliveryId: string,
  payload: string,
): Promise<PostResult> {
  const host = new URL(sub.url).hostname.replace(/^\[|\]$/g, '');
  // Literal IPs never go through DNS, so the connect-time guard checks them here.
  if (isIP(host) !== 0 && addressProblem(host, deps.guard) !== undefined)
    return { statusCode: null, error: 'blocked_address', request: null, response: null };
  const sent: AttemptRequest = {
    url: sub.url,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'SignalService-Webhooks/1.0',
      ...signatureHeaders(sub.secrets, deliveryId, payload),
    },
  };
  const res = await deps.receivers.post(sub.url, sent.headers, payload, {
    timeoutMs: deps.timeoutMs,
    maxResponseBytes: deps.maxResponseBytes,
  });
  if (!res.ok) return { statusCode: null, error: res.error, request: sent, response: null };
  const statusCode = res.status;
  const response: AttemptResponse = {
    status: statusCode,
    headers: res.headers,
    body: res.body,
    body_truncated: res.truncated,
  };
  if (statusCode >= 200 && statusCode < 300) return { statusCode, error: null, request: sent, response };
  if (statusCode >= 300 && statusCode < 400)
    return { statusCode, error: 'redirect_not_followed', request: sent, response };
  return {
    statusCode,
    error: `http_${statusCode}`,
    retryAfterMs: statusCode === 429 || statusCode === 503 ? parseRetryAfter(res.retryAfter) : undefined,
    request: sent,
    response,
  };
}

/** What an attempt needs: from the job itself, or (a job of an older producer) from the store. */
async function attemptInput(
  deps: DeliverDeps,
  job: WebhookDeliveryJob,
): Promise<{ deliveryId: string; webhookId: string; payload: string } | undefined> {
  if (job.payload !== undefined && job.webhook_id !== undefined)
    return { deliveryId: job.delivery_id, webhookId: job.webhook_id, payload: job.payload };
  const delivery = await deps.findDelivery(job.delivery_id);
  if (!delivery) return undefined;
  return { deliveryId: delivery._id, webhookId: delivery.webhook_id, payload: delivery.payload };
}

function logEntry(
  deliveryId: string,
  webhookId: string,
  attempt: number,
  outcome: { status: DeliveryStatus; next_attempt_at: Date | null },
  made?: AttemptRecord,
): DeliveryLogEntry {
  const seq = attemptSeq(attempt);
  return {
    _id: logEntryId(deliveryId, seq),
    delivery_id: deliveryId,
    webhook_id: webhookId,
    seq,
    kind: made ? 'attempt' : 'dropped',
    attempt,
    status: outcome.status,
    next_attempt_at: outcome.next_attempt_at,
    at: new Date(),
    started_at: made?.started_at ?? null,
    duration_ms: made?.duration_ms ?? null,
    status_code: made?.status_code ?? null,
    error: made?.error ?? (made ? null : 'subscription_disabled'),
    trace_id: currentTraceId() ?? null,
    ...(made ? { request: made.request ?? null, response: made.response ?? null } : {}),
  };
}

/** The event's time, from the body the delivery carries (its `timestamp`), for the lag metric. */
const EVENT_TIME = /"timestamp":"([^"]+)"/;

/**
 * Makes one attempt of one delivery. In order: not due yet → back to the delay cascade until it
 * is → refuse disabled subscriptions → respect the account's share and the subscription's cap →
 * POST signed → on failure schedule the next attempt *before* recording this one (a crash then
 * re-sends, never forgets) → append the attempt to the delivery log, in a batch with others;
 * the job is acknowledged only after that write, and the entry's id is the attempt's, so a job
 * redelivered after a crash never records twice. No store read on the way: the job carries the
 * body, the subscription comes from a short in-process cache.
 */
export async function deliverAttempt(deps: DeliverDeps, job: WebhookDeliveryJob): Promise<void> {
  if (job.due_at !== undefined && job.due_at - Date.now() > DUE_TOLERANCE_MS) {
    await deps.schedule(job);
    return;
  }
  const input = await attemptInput(deps, job);
  if (!input) return;
  const { deliveryId, webhookId } = input;
  const sub =
    job.subscription_at !== undefined
      ? await deps.subscriptions.findAtLeast(webhookId, job.subscription_at)
      : job.event === undefined
        ? await deps.subscriptions.findById(webhookId)
        : await deps.subscriptions.findForEvent(job.event, webhookId);
  if (!sub || sub.status !== 'enabled') {
    await deps.log.insert([
      logEntry(deliveryId, webhookId, job.attempt, { status: 'failed', next_attempt_at: null }),
    ]);
    return;
  }
  if (!deps.slots.tryAcquire(sub.account_id, sub._id)) {
    // Its account at its share, or the subscription at its cap (slow receivers): wait a second
    // outside the worker rather than hold a job another account's delivery could use.
    await deps.schedule(job, 1000);
    return;
  }
  const startedAt = new Date();
  let result: PostResult;
  try {
    result = await post(deps, sub, deliveryId, input.payload);
  } finally {
    deps.slots.release(sub.account_id, sub._id);
  }
  const made: AttemptRecord = {
    attempt: job.attempt,
    started_at: startedAt,
    duration_ms: Date.now() - startedAt.getTime(),
    status_code: result.statusCode,
    error: result.error,
    request: result.request,
    response: result.response,
  };
  const record = (status: DeliveryStatus, next: Date | null = null) => {
    metrics
      .webhookAttempts()
      .inc({ outcome: result.error === null ? 'succeeded' : status === 'pending' ? 'retry' : 'failed' });
    return deps.log.insert([
      logEntry(deliveryId, webhookId, job.attempt, { status, next_attempt_at: next }, made),
    ]);
  };
  metrics.webhookAttemptDuration().observe(made.duration_ms / 1000);
  if (result.error === null) {
    const eventAt = Date.parse(EVENT_TIME.exec(input.payload)?.[1] ?? '');
    if (Number.isFinite(eventAt))
      metrics.webhookEventToDelivery().observe(Math.max(0, Date.now() - eventAt) / 1000);
    await record('succeeded');
    return;
  }
  if (result.statusCode === 410) {
    await deps.disableSubscription(sub._id, 'The endpoint responded 410 Gone.');
    deps.subscriptions.forget();
    await record('failed');
    return;
  }
  const delay = retryDelayMs(deps.retryDelaysMs, job.attempt, result.retryAfterMs, deps.maxRetryAfterMs);
  if (delay === undefined) {
    deps.logger.info({ delivery: deliveryId, attempts: job.attempt }, 'delivery failed for good');
    await record('failed');
    return;
  }
  const dueAt = Date.now() + delay;
  await deps.schedule({
    delivery_id: deliveryId,
    attempt: job.attempt + 1,
    webhook_id: webhookId,
    event: job.event,
    payload: input.payload,
    due_at: dueAt,
  });
  await record('pending', new Date(dueAt));
}
