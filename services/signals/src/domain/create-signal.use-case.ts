import { createHash } from 'node:crypto';
import type { CreateSignalInput, SignalDetail } from '@signal/contracts';
import { fail, newId, succeed, type Result } from '@signal/service-kit';
import { openingMarket } from './performance';
import type { SignalWriteStore, WriteEffects } from './ports';
import type { SignalDocument, StoredSignal } from './signal';
import { signalEvent } from './signal-events';
import { toDetail, toSnapshot } from './signal.mapper';

const FUTURE_TOLERANCE_MS = 60_000;

function requestHash(input: CreateSignalInput): string {
  return createHash('sha256').update(JSON.stringify(input)).digest('base64url');
}

/**
 * Builds the stored signal and its `signal.new` event (one document, one atomic write), or a
 * VALIDATION_ERROR when created_at is in the future.
 */
export function newSignalDocument(
  input: CreateSignalInput,
  idempotencyKey: string | undefined,
  now = new Date(),
  eventName: 'signal.new' | 'signal.updated' = 'signal.new',
): Result<SignalDocument, 'VALIDATION_ERROR'> {
  const createdAt = input.created_at ? new Date(input.created_at) : now;
  if (createdAt.getTime() > now.getTime() + FUTURE_TOLERANCE_MS) {
    return fail('VALIDATION_ERROR', 'created_at must not be in the future', {
      details: [{ field: 'created_at', message: 'must not be in the future' }],
    });
  }
  // The id's ULID time is created_at, so id order is created_at order (see data/collections.ts).
  const id = newId('sig', createdAt.getTime());
  const market = openingMarket(input.metrics);
  const base: StoredSignal = {
    _id: id,
    token: {
      symbol: input.token.symbol,
      name: input.token.name,
      contract: input.token.contract,
      age_hours: input.token.age_hours,
      dex_paid: input.token.dex_paid,
      socials: {
        twitter: input.token.socials?.twitter ?? null,
        telegram: input.token.socials?.telegram ?? null,
        website: input.token.socials?.website ?? null,
      },
    },
    metrics: {
      mcap_entry: input.metrics.mcap_entry,
      mcap_current: market.mcap_current,
      mcap_ath: market.mcap_ath,
      volume_24h: input.metrics.volume_24h,
      holders: input.metrics.holders,
      liquidity: input.metrics.liquidity,
    },
    performance: {
      roi: market.roi,
      ath_roi: market.ath_roi,
      status: input.performance?.status ?? 'active',
      time_to_ath_hours: input.performance?.time_to_ath_hours ?? 0,
    },
    type: input.type,
    is_premium: input.is_premium,
    created_at: createdAt,
    updated_at: now,
    version: 1,
    idem_key: idempotencyKey ?? id,
    idem_hash: requestHash(input),
  };
  return succeed({ ...base, outbox: [signalEvent(eventName, base, now)], has_outbox: true });
}

export interface CreatedSignal {
  signal: SignalDetail;
  /** false when an earlier create with the same Idempotency-Key made it. */
  created: boolean;
}

/**
 * Stores a new signal and its `signal.new` event in one write and hands back the detail. A
 * retry with the same Idempotency-Key returns the first signal, and a reuse of the key for a
 * different body is refused.
 */
export async function createSignal(
  repository: SignalWriteStore,
  effects: WriteEffects,
  input: CreateSignalInput,
  idempotencyKey?: string,
): Promise<Result<CreatedSignal, 'VALIDATION_ERROR' | 'IDEMPOTENCY_CONFLICT'>> {
  if (idempotencyKey) {
    const existing = await repository.findByIdemKey(idempotencyKey);
    if (existing) return replay(existing, input);
  }
  const built = newSignalDocument(input, idempotencyKey);
  if (!built.ok) return built;
  const doc = built.value;
  if ((await repository.insert(doc)) === 'duplicate') {
    // A concurrent create with the same Idempotency-Key stored first: this request is its retry.
    const existing = idempotencyKey ? await repository.findByIdemKey(idempotencyKey) : null;
    if (!existing) throw new Error(`signal ${doc._id} collides with a stored one`);
    return replay(existing, input);
  }
  await effects.written([toSnapshot(doc)]);
  return succeed({ signal: toDetail(doc), created: true });
}

function replay(
  existing: StoredSignal,
  input: CreateSignalInput,
): Result<CreatedSignal, 'IDEMPOTENCY_CONFLICT'> {
  if (existing.idem_hash !== requestHash(input)) return fail('IDEMPOTENCY_CONFLICT');
  return succeed({ signal: toDetail(existing), created: false });
}

export interface BulkCreated {
  created: number;
  skipped: number;
  /** The signals this request created; on a replay, the batch's signals as first created. */
  ids: string[];
  /** An earlier request with the same Idempotency-Key and body made the whole batch. */
  replayed: boolean;
}

/**
 * Backfill: many signals in one unordered insert; keyed items already stored are skipped.
 * Historical signals are announced as the internal `signal.updated` (projections such as stats
 * take them in), not as `signal.new`: subscribers are not paged about old signals.
 * With an Idempotency-Key (item i is keyed `<key>:<i>`): a repeat of a batch made whole returns
 * its ids without writing; a reuse of the key for another batch is refused (409), as for a
 * single create, since storing it would keep only the items at positions the first batch did
 * not use and drop the others silently; a repeat of a batch an earlier attempt made only in
 * part stores the rest.
 */
export async function bulkCreateSignals(
  repository: SignalWriteStore,
  effects: WriteEffects,
  inputs: CreateSignalInput[],
  idempotencyKey?: string,
): Promise<Result<BulkCreated, 'VALIDATION_ERROR' | 'IDEMPOTENCY_CONFLICT'>> {
  if (idempotencyKey) {
    const replayed = await replayBulk(repository, inputs, idempotencyKey);
    if (!replayed.ok) return replayed;
    if (replayed.value) return succeed(replayed.value);
  }
  const now = new Date();
  const docs: SignalDocument[] = [];
  for (const [i, input] of inputs.entries()) {
    const key = idempotencyKey ? `${idempotencyKey}:${i}` : undefined;
    const built = newSignalDocument(input, key, now, 'signal.updated');
    if (!built.ok) return built;
    docs.push(built.value);
  }
  const { duplicates, outbox } = await repository.insertManyWithBatch(docs, newId('obx'));
  const skipped = new Set(duplicates);
  const created = docs.filter((d) => !skipped.has(d.idem_key));
  await effects.written(created.map(toSnapshot), outbox);
  return succeed({
    created: created.length,
    skipped: skipped.size,
    ids: created.map((d) => d._id),
    replayed: false,
  });
}

/**
 * The response to a repeat of a keyed batch, when its first item is stored: every item stored and
 * the same → the batch's ids; any item different → IDEMPOTENCY_CONFLICT; some missing (an earlier
 * attempt stopped part-way) → undefined, and the insert stores the rest.
 */
async function replayBulk(
  repository: SignalWriteStore,
  inputs: CreateSignalInput[],
  key: string,
): Promise<Result<BulkCreated | undefined, 'IDEMPOTENCY_CONFLICT'>> {
  const first = await repository.findByIdemKey(`${key}:0`);
  if (!first) return succeed(undefined);
  const stored = [
    first,
    ...(await Promise.all(inputs.slice(1).map((_, i) => repository.findByIdemKey(`${key}:${i + 1}`)))),
  ];
  for (const [i, input] of inputs.entries()) {
    const doc = stored[i];
    if (doc && doc.idem_hash !== requestHash(input)) return fail('IDEMPOTENCY_CONFLICT');
  }
  const whole = stored.filter((doc): doc is StoredSignal => doc !== null);
  if (whole.length < inputs.length) return succeed(undefined);
  return succeed({ created: 0, skipped: inputs.length, ids: whole.map((doc) => doc._id), replayed: true });
}
