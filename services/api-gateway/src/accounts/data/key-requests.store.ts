import { isDuplicateKeyError } from '@signal/service-kit';
import type { Collection, Connection } from 'mongoose';
import type { KeyRequestClaim, KeyRequests } from '../domain/ports';

interface KeyRequestDocument {
  /** `<account>:<Idempotency-Key>` */
  _id: string;
  request_hash: string;
  key_id: string;
  /** The key as returned to the client, sealed (domain/sealed-secret.ts); null until it exists. */
  sealed_key: string | null;
  expires_at: Date;
}

const SWEEP_EVERY_MS = 3_600_000;

/**
 * Key creations by Idempotency-Key, one record per (account, key) kept 24 h. The record is
 * claimed before the key is made, with the key's id chosen up front, so concurrent retries of
 * one request make one key. Expired records are removed on the next claim after an hour (no
 * TTL indexes on the MongoDB subset we keep to), the sealed key with them.
 */
export class KeyRequestStore implements KeyRequests {
  private readonly records: Collection<KeyRequestDocument>;
  private lastSweep = 0;

  constructor(
    connection: Connection,
    private readonly ttlMs = 24 * 3_600_000,
  ) {
    this.records = connection.collection<KeyRequestDocument>('api_key_requests');
  }

  async claim(accountId: string, key: string, requestHash: string, keyId: string): Promise<KeyRequestClaim> {
    const _id = `${accountId}:${key}`;
    const now = Date.now();
    if (now - this.lastSweep > SWEEP_EVERY_MS) {
      this.lastSweep = now;
      void this.records.deleteMany({ expires_at: { $lt: new Date(now) } }).catch(() => undefined);
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      const inserted = await this.records
        .insertOne({
          _id,
          request_hash: requestHash,
          key_id: keyId,
          sealed_key: null,
          expires_at: new Date(now + this.ttlMs),
        })
        .then(
          () => true,
          (err: unknown) => {
            if (isDuplicateKeyError(err)) return false;
            throw err;
          },
        );
      if (inserted) return { outcome: 'new' };
      const found = await this.records.findOne({ _id });
      if (!found) continue;
      if (found.expires_at.getTime() <= now) {
        await this.records.deleteOne({ _id, expires_at: found.expires_at });
        continue;
      }
      if (found.request_hash !== requestHash) return { outcome: 'conflict' };
      return { outcome: 'replay', keyId: found.key_id, sealedKey: found.sealed_key ?? undefined };
    }
    throw new Error('Idempotency-Key record kept changing');
  }

  async sealedKey(accountId: string, key: string): Promise<string | undefined> {
    return (await this.records.findOne({ _id: `${accountId}:${key}` }))?.sealed_key ?? undefined;
  }

  async complete(accountId: string, key: string, sealedKey: string): Promise<void> {
    await this.records.updateOne({ _id: `${accountId}:${key}` }, { $set: { sealed_key: sealedKey } });
  }

  async release(accountId: string, key: string): Promise<void> {
    await this.records.deleteOne({ _id: `${accountId}:${key}` });
  }
}
