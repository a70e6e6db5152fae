import { isIP } from 'node:net';
import { DUE_TOLERANCE_MS, NOT_SENT_WHILE_DISABLED, type WebhookDeliveryJob } from '@signal/contracts';
import { currentTraceId, isMongoUnavailable, metrics, newId, type Logger } from '@signal/service-kit';
import type {
  AttemptRecord,
  AttemptRequest,
  AttemptResponse,
  DeliveryDocument,
  DeliveryLogEntry,
  DeliveryStatus,
  SubscriptionDocument,
} from './records';
import type { AttemptPlaces } from './concurrency';
import { parseRetryAfter, retryDelayMs, type ScheduleJob } from './delivery-jobs';
import { attemptSeq, logEntryId } from './delivery-state';
import type {
  AttemptClaims,
  DeliveryLogWriter,
  HealthRecorder,
  OpenDeliveries,
  ReceivedResponse,
  ReceiverClient,
  SubscriptionLookup,
} from './ports';
import { storedBody, storedHeaders } from './receiver-bytes';
import { signatureHeaders } from './signing';
import { addressProblem, type GuardPolicy } from './url-guard';

export interface DeliverDeps {
  log: DeliveryLogWriter;
  /** Attempt claims: one job per attempt makes it (see claimAttempt). */
  claims: AttemptClaims;
  /** One entry of the log by its id (a redelivered job's attempt, recorded or not). */
  findLogEntry(id: string): Promise<DeliveryLogEntry | null>;
  /** Deliveries that failed an attempt and have not succeeded since (what recover reads). */
  open: OpenDeliveries;
  /** Each subscription's health, kept up to date as attempts are recorded. */
  health: HealthRecorder;
  /** Only for jobs of an older producer, which carry no body. */
  findDelivery(id: string): Promise<DeliveryDocument | null>;
  disableSubscription(id: string, reason: string): Promise<void>;
  subscriptions: SubscriptionLookup;
  receivers: ReceiverClient;
  schedule: ScheduleJob;
  logger: Logger;
  /** Per-account share, line and POSTs in flight, and per-subscription limit of attempts. */
  slots: AttemptPlaces;
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
  // A body that did not end fails the attempt (a timeout, a reset), yet the receiver's status and
  // what came of the body are what its owner needs to see why.
  if (!res.ok)
    return res.partial
      ? { statusCode: res.partial.status, error: res.error, request: sent, response: stored(res.partial) }
      : { statusCode: null, error: res.error, request: sent, response: null };
  const statusCode = res.status;
  const response = stored(res);
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

/** A response as the attempt keeps it: its head bounded and escaped, the first bytes of its body. */
function stored(res: ReceivedResponse): AttemptResponse {
  return {
    status: res.status,
    ...storedHeaders(res.headers),
    ...storedBody(res.body, res.truncated),
    body_truncated: res.truncated,
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
    error: made?.error ?? (made ? null : NOT_SENT_WHILE_DISABLED),
    trace_id: currentTraceId() ?? null,
    ...(made ? { request: made.request ?? null, response: made.response ?? null } : {}),
  };
}

/** The event's time, from the body the delivery carries (its `timestamp`), for the lag metric. */
const EVENT_TIME = /"timestamp":"([^"]+)"/;

/** Where an attempt leaves its delivery. */
interface Outcome {
  status: DeliveryStatus;
  next_attempt_at: Date | null;
}

/** After a failed attempt: the next one's time, or failed for good. */
function afterFailure(deps: DeliverDeps, job: WebhookDeliveryJob, retryAfterMs?: number): Outcome {
  const delay = job.one_attempt
    ? undefined
    : retryDelayMs(deps.retryDelaysMs, job.attempt, retryAfterMs, deps.maxRetryAfterMs);
  return delay === undefined
    ? { status: 'failed', next_attempt_at: null }
    : { status: 'pending', next_attempt_at: new Date(Date.now() + delay) };
}

/**
 * Records an attempt. A refusal of the store is never a reason to make the attempt again: the
 * record is kept without what the receiver sent (only our own fields), and the refusal logged
 * (the batch writer meters it). An unreachable store throws: the job comes back, finds its own
 * claim and records the attempt then, without another POST.
 */
async function recordAttempt(deps: DeliverDeps, entry: DeliveryLogEntry): Promise<void> {
  try {
    await deps.log.insert([entry]);
  } catch (err) {
    if (isMongoUnavailable(err)) throw err;
    deps.logger.error(
      {
        delivery: entry.delivery_id,
        attempt: entry.attempt,
        err: err instanceof Error ? err.message : String(err),
      },
      'attempt record refused; kept without the request and response',
    );
    await deps.log.insert([{ ...entry, request: null, response: null }]);
  }
}

/** What follows a recorded attempt: the next attempt queued, the open-deliveries index, health. */
async function afterRecord(
  deps: DeliverDeps,
  job: WebhookDeliveryJob,
  input: { deliveryId: string; webhookId: string; payload: string },
  accountId: string,
  entry: DeliveryLogEntry,
): Promise<void> {
  if (entry.status === 'succeeded') {
    // Only a delivery that failed before (a later attempt) can be in the index.
    if (job.attempt > 1 || job.one_attempt) await deps.open.close(input.deliveryId);
  } else if (!job.marked_open) {
    await deps.open.mark({
      _id: input.deliveryId,
      webhook_id: input.webhookId,
      account_id: accountId,
      at: entry.at,
    });
  }
  if (entry.status === 'pending' && entry.next_attempt_at) {
    await deps.schedule({
      delivery_id: input.deliveryId,
      attempt: job.attempt + 1,
      webhook_id: input.webhookId,
      event: job.event,
      payload: input.payload,
      due_at: new Date(entry.next_attempt_at).getTime(),
      job_id: newId('job'),
      // Marked above (or by an earlier attempt) before this job exists: its failure marks nothing.
      marked_open: true,
    });
  }
}

/**
 * Makes one attempt of one delivery. In order: not due yet → back to the delay cascade until it
 * is → refuse disabled subscriptions → a place within the account's share and the
 * subscription's limit (waiting in the account's line for one of its POSTs to finish, if need be) →
 * claim the attempt (one job per attempt id makes it: a "retry now" and the retry timer's job
 * never both POST) → POST signed → record the attempt (in a batch with others; the entry's id is
 * the attempt's) → then, and only then, queue the next attempt. The job is acknowledged after
 * all of it. Nothing after the POST can cause another POST: a job redelivered after a crash, or
 * retried because a write failed, finds its own claim and finishes the bookkeeping instead (an
 * attempt claimed but never recorded is recorded as interrupted). No store read on the way: the
 * job carries the body, the subscription comes from a short in-process cache.
 */
export async function deliverAttempt(deps: DeliverDeps, job: WebhookDeliveryJob): Promise<void> {
  if (job.due_at !== undefined && job.due_at - Date.now() > DUE_TOLERANCE_MS) {
    await deps.schedule(job);
    return;
  }
  const input = await attemptInput(deps, job);
  if (!input) return;
  const { deliveryId, webhookId } = input;
  // A job put back before is back: it no longer waits outside for its subscription.
  if ((job.deferred ?? 0) > 0) deps.slots.cameBack(webhookId);
  const lookUp = () =>
    job.subscription_at !== undefined
      ? deps.subscriptions.findAtLeast(webhookId, job.subscription_at)
      : job.event === undefined
        ? deps.subscriptions.findById(webhookId)
        : deps.subscriptions.findForEvent(job.event, webhookId);
  const gone = async (sub: SubscriptionDocument | null) => {
    await deps.log.insert([
      logEntry(deliveryId, webhookId, job.attempt, { status: 'failed', next_attempt_at: null }),
    ]);
    // Kept failed, open to recover once the subscription is enabled again.
    if (sub && !job.marked_open)
      await deps.open.mark({
        _id: deliveryId,
        webhook_id: webhookId,
        account_id: sub.account_id,
        at: new Date(),
      });
  };
  const sub = await lookUp();
  if (!sub || sub.status !== 'enabled') return gone(sub);
  const asked = deps.slots.acquire(sub.account_id, sub._id);
  const place = await asked;
  if (place === true && asked instanceof Promise) {
    // It waited (up to a minute for its subscription): the subscription may have been deleted
    // or disabled meanwhile, and a deleted subscription's receiver gets nothing more.
    const now = await lookUp();
    if (!now || now.status !== 'enabled') {
      deps.slots.release(sub.account_id, sub._id);
      return gone(now);
    }
  }
  if (place !== true) {
    // The subscription at its limit (a slow receiver), its account at its share of the worker,
    // or its account's line full: wait outside the worker (longer each time) rather than hold a job
    // another account's delivery or the account's other subscriptions could use.
    metrics.webhookAttempts().inc({ outcome: 'deferred' });
    metrics.webhookDeferrals().inc({ reason: place });
    const deferred = job.deferred ?? 0;
    await deps.schedule(
      { ...job, deferred: deferred + 1 },
      deps.slots.sendAway(sub.account_id, sub._id, place, deferred),
    );
    return;
  }
  const attemptId = logEntryId(deliveryId, attemptSeq(job.attempt));
  const startedAt = new Date();
  let result: PostResult;
  try {
    const claim = await deps.claims.claim(attemptId, job.job_id ?? LEGACY_JOB);
    if (claim.outcome === 'taken') {
      metrics.webhookAttempts().inc({ outcome: 'claimed_elsewhere' });
      return;
    }
    if (claim.outcome === 'again') {
      const recorded = await deps.findLogEntry(attemptId);
      const entry =
        recorded ??
        logEntry(deliveryId, webhookId, job.attempt, afterFailure(deps, job), {
          attempt: job.attempt,
          // The interrupted POST began when this job claimed the attempt, not now.
          started_at: claim.claimedAt,
          duration_ms: 0,
          status_code: null,
          error: 'attempt_interrupted',
          request: null,
          response: null,
        });
      if (!recorded) await recordAttempt(deps, entry);
      await afterRecord(deps, job, input, sub.account_id, entry);
      return;
    }
    result = await post(deps, sub, deliveryId, input.payload);
  } finally {
    deps.slots.release(sub.account_id, sub._id, Date.now() - startedAt.getTime());
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
  metrics.webhookAttemptDuration().observe(made.duration_ms / 1000);
  let outcome: Outcome;
  if (result.error === null) {
    const eventAt = Date.parse(EVENT_TIME.exec(input.payload)?.[1] ?? '');
    if (Number.isFinite(eventAt))
      metrics.webhookEventToDelivery().observe(Math.max(0, Date.now() - eventAt) / 1000);
    outcome = { status: 'succeeded', next_attempt_at: null };
  } else if (result.statusCode === 410) {
    await deps.disableSubscription(sub._id, 'The endpoint responded 410 Gone.');
    deps.subscriptions.forget();
    outcome = { status: 'failed', next_attempt_at: null };
  } else {
    outcome = afterFailure(deps, job, result.retryAfterMs);
    if (outcome.status === 'failed')
      deps.logger.info({ delivery: deliveryId, attempts: job.attempt }, 'delivery failed for good');
  }
  metrics.webhookAttempts().inc({
    outcome: result.error === null ? 'succeeded' : outcome.status === 'pending' ? 'retry' : 'failed',
  });
  const entry = logEntry(deliveryId, webhookId, job.attempt, outcome, made);
  await recordAttempt(deps, entry);
  deps.health.note(sub._id, made);
  await afterRecord(deps, job, input, sub.account_id, entry);
}

/** The claimant of a job queued by a producer from before job ids (its redelivery finds its claim). */
const LEGACY_JOB = 'job_legacy';
