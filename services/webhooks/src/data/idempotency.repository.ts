import { isDuplicateKeyError } from '@signal/service-kit';
import { Schema, type Connection, type Model } from 'mongoose';

interface IdempotencyDocument {
  _id: string;
  request_hash: string;
  resource_id: string;
  expires_at: Date;
}

const schema = new Schema<IdempotencyDocument>(
  {
    _id: { type: String, required: true },
    request_hash: { type: String, required: true },
    resource_id: { type: String, required: true },
    expires_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'idempotency_keys' },
);

export type Claim =
  | { outcome: 'new'; resourceId: string }
  | { outcome: 'replay'; resourceId: string }
  | { outcome: 'conflict' };

/**
 * Idempotency-Key records, one per (account, key), kept 24 h (expired in code: no TTL indexes
 * on the MongoDB subset we keep to). The record is claimed before the resource is made, with
 * the resource's id chosen up front, so concurrent retries of one request make one resource.
 */
export class IdempotencyRepository {
  private readonly model: Model<IdempotencyDocument>;

  constructor(
    connection: Connection,
    private readonly ttlMs = 24 * 3_600_000,
  ) {
    this.model =
      connection.models.IdempotencyKey ?? connection.model<IdempotencyDocument>('IdempotencyKey', schema);
  }

  async claim(scope: string, key: string, requestHash: string, newResourceId: string): Promise<Claim> {
    const _id = `${scope}:${key}`;
    for (let i = 0; i < 3; i++) {
      try {
        await this.model.create({
          _id,
          request_hash: requestHash,
          resource_id: newResourceId,
          expires_at: new Date(Date.now() + this.ttlMs),
        });
        return { outcome: 'new', resourceId: newResourceId };
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
      const existing = await this.model.findById(_id).exec();
      if (!existing) continue;
      if (existing.expires_at.getTime() <= Date.now()) {
        await this.model.deleteOne({ _id, expires_at: existing.expires_at }).exec();
        continue;
      }
      return existing.request_hash === requestHash
        ? { outcome: 'replay', resourceId: existing.resource_id }
        : { outcome: 'conflict' };
    }
    throw new Error('idempotency key kept changing');
  }

  /** The resource could not be made: let a retry try again. */
  async release(scope: string, key: string): Promise<void> {
    await this.model.deleteOne({ _id: `${scope}:${key}` }).exec();
  }
}
