import { createHash } from 'node:crypto';
import type { ErrorCode } from '@signal/contracts';
import { fail, succeed, type Result } from '@signal/service-kit';
import type { Claim, IdempotencyKeys } from './ports';

/** An action's value, and whether it answers a repeat of the first request (not performed again). */
export interface Performed<T> {
  value: T;
  replayed: boolean;
}

/** An action on a subscription that a client may send again when its response is lost. */
export interface OnceByKey<T, C extends ErrorCode> {
  /** What identifies the request when sent again: its operation, its ids, its body. */
  request: unknown;
  perform: () => Promise<Result<T, C>>;
  /** What the store keeps of the first request's value to answer its repeats (never a secret). */
  keep: (value: T) => string;
  /** The first request's answer again, from what was kept. */
  replay: (kept: string) => Promise<Result<T, C | 'CONFLICT'>>;
}

/**
 * How long after claiming an Idempotency-Key its first request is surely over (a few store
 * reads and writes and a publish, under the service's request timeout).
 */
const FIRST_REQUEST_OVER_MS = 30_000;
/** A repeat arriving while the first request is at work waits for it this often, this long. */
const WAIT_TRIES = 20;
const WAIT_MS = 50;

const hashOf = (request: unknown): string =>
  createHash('sha256').update(JSON.stringify(request)).digest('base64url');

/**
 * Performs an action once per Idempotency-Key (without a key, every time): the key is claimed
 * before the action, so repeats sent at once perform it once. A repeat of the same request within
 * 24 h answers from what the first kept; a repeat while the first is at work waits for it a
 * moment, then is told to retry; the key sent with another request is refused. A first request
 * that failed (a refusal or an error) gives the key back, so a repeat performs it then.
 */
export async function performOnce<T, C extends ErrorCode>(
  keys: IdempotencyKeys,
  accountId: string,
  idempotencyKey: string | undefined,
  action: OnceByKey<T, C>,
): Promise<Result<Performed<T>, C | 'CONFLICT' | 'IDEMPOTENCY_CONFLICT'>> {
  if (idempotencyKey === undefined) return performed(await action.perform(), false);
  const requestHash = hashOf(action.request);
  for (let tries = 0; tries < WAIT_TRIES; tries++) {
    const claim = await keys.claim(accountId, idempotencyKey, requestHash, '');
    if (claim.outcome === 'conflict')
      return fail(
        'IDEMPOTENCY_CONFLICT',
        'This Idempotency-Key was used with another request (another route, webhook, delivery or body); a new request needs a new key.',
      );
    if (claim.outcome === 'new') return performFirst(keys, accountId, idempotencyKey, action);
    if (claim.kept !== undefined) return performed(await action.replay(claim.kept), true);
    if (firstRequestOver(claim)) break;
    await new Promise((r) => setTimeout(r, WAIT_MS));
  }
  return fail(
    'CONFLICT',
    'The first request with this Idempotency-Key is still being processed, or ended without an answer; retry, or use a new Idempotency-Key to send it again.',
  );
}

async function performFirst<T, C extends ErrorCode>(
  keys: IdempotencyKeys,
  accountId: string,
  idempotencyKey: string,
  action: OnceByKey<T, C>,
): Promise<Result<Performed<T>, C>> {
  let result: Result<T, C>;
  try {
    result = await action.perform();
  } catch (err) {
    await keys.release(accountId, idempotencyKey).catch(() => undefined);
    throw err;
  }
  if (!result.ok) {
    await keys.release(accountId, idempotencyKey).catch(() => undefined);
    return result;
  }
  // Should this write fail, a repeat is told to retry, then (once the first is surely over) to
  // use a new key: never performed twice.
  await keys.finish(accountId, idempotencyKey, action.keep(result.value)).catch(() => undefined);
  return succeed({ value: result.value, replayed: false });
}

const firstRequestOver = (claim: Extract<Claim, { outcome: 'replay' }>): boolean =>
  claim.finished || Date.now() - claim.claimedAt.getTime() > FIRST_REQUEST_OVER_MS;

function performed<T, C extends ErrorCode>(result: Result<T, C>, replayed: boolean): Result<Performed<T>, C> {
  return result.ok ? succeed({ value: result.value, replayed }) : result;
}
