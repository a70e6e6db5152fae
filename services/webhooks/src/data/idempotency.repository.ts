import { isDuplicateKeyError } from '@signal/service-kit';
import type { mongo } from 'mongoose';
import type { Claim, IdempotencyKeys } from '../domain/ports';
import type { IdempotencyDocument } from './webhook.models';

/** How often a process removes the records past their 24 h. */
const SWEEP_EVERY_MS = 3_600_000;

/**
 * Idempotency-Key records, one per (account, key), kept 24 h (expired in code: no TTL indexes
 * on the MongoDB subset we keep to). The record is claimed before the resource is made, with
 * the resource's id chosen up front, so concurrent retries of one request make one resource.
 * Expired records are removed by the first claim after an hour: the SDKs send a key with every
 * action, so without it the records would grow with every call ever made.
 */
export class IdempotencyRepository implements IdempotencyKeys {
  private lastSweep = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly keys: mongo.Collection<IdempotencyDocument>,
    private readonly ttlMs = 24 * 3_600_000,
    private readonly now: () => number = Date.now,
  ) {}

  async claim(scope: string, key: string, requestHash: string, newResourceId: string): Promise<Claim> {
    const _id = `${scope}:${key}`;
    await this.sweepNowAndThen();
    for (let i = 0; i < 3; i++) {
      try {
        await this.keys.insertOne({
          _id,
          request_hash: requestHash,
          resource_id: newResourceId,
          expires_at: new Date(this.now() + this.ttlMs),
        });
        return { outcome: 'new', resourceId: newResourceId };
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
      const existing = await this.keys.findOne({ _id });
      if (!existing) continue;
      if (existing.expires_at.getTime() <= this.now()) {
        await this.keys.deleteOne({ _id, expires_at: existing.expires_at });
        continue;
      }
      return existing.request_hash === requestHash
        ? {
            outcome: 'replay',
            resourceId: existing.resource_id,
            claimedAt: new Date(existing.expires_at.getTime() - this.ttlMs),
            finished: existing.finished_at !== undefined,
            ...(existing.kept !== undefined ? { kept: existing.kept } : {}),
          }
        : { outcome: 'conflict' };
    }
    throw new Error('idempotency key kept changing');
  }

  /** Removes the expired records, at most once an hour; a failure waits for the next hour. */
  private async sweepNowAndThen(): Promise<void> {
    const now = this.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    await this.keys.deleteMany({ expires_at: { $lt: new Date(now) } }).catch(() => undefined);
  }

  /** The resource could not be made: let a retry try again. */
  async release(scope: string, key: string): Promise<void> {
    await this.keys.deleteOne({ _id: `${scope}:${key}` });
  }

  /** The first request made its resource, or performed its action and kept `kept`. */
  async finish(scope: string, key: string, kept?: string): Promise<void> {
    await this.keys.updateOne(
      { _id: `${scope}:${key}` },
      { $set: { finished_at: new Date(), ...(kept !== undefined ? { kept } : {}) } },
    );
  }
}
