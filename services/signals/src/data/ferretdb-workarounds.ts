import type { SignalEvent } from '@signal/contracts';
import { KeyedMutex } from '@signal/service-kit';
import type { mongo } from 'mongoose';
import type { SignalDocument } from '../domain/signal';

/**
 * What the signals store does differently because of FerretDB 1.24, the MongoDB-wire server of
 * machines without MongoDB (CI, the local run command). One code path serves MongoDB and
 * FerretDB alike; on MongoDB each of these costs nothing or next to nothing.
 * test/ferretdb-workarounds.test.ts shows, for each, the server behaviour it works around.
 */

/**
 * FerretDB applies an update as read-modify-write of the whole document without re-checking
 * the filter, so two concurrent compare-and-set updates of one document can both "match" and
 * one of them is lost. Every update of one signal from this process runs through this lock
 * (so run one signals instance on FerretDB).
 */
export const oneUpdatePerDocumentAtATime = (): KeyedMutex => new KeyedMutex();

/**
 * Lookups by several ids: one equality each, in parallel (service-kit's `eachById`, shared with
 * the webhooks service; why there). The hot paths still avoid reads by id where they can (bulk
 * outbox batches are handed to the relay in memory, failed index updates are re-applied from
 * the snapshots the index maintenance holds).
 */
export { eachById } from '@signal/service-kit';

/**
 * FerretDB ignores a `$pull` with a condition (it matches, modifies nothing). Published events
 * leave the outbox by reading it and `$set`ting what remains under a version check, again when
 * another write moved the version in between.
 */
export async function trimOutbox(
  signals: mongo.Collection<SignalDocument>,
  id: string,
  published: ReadonlySet<string>,
): Promise<void> {
  for (let i = 0; i < 10; i++) {
    const doc = await signals.findOne({ _id: id }, { projection: { outbox: 1, version: 1 } });
    if (!doc) return;
    const remaining: SignalEvent[] = (doc.outbox ?? []).filter((e) => !published.has(e.id));
    const result = await signals.updateOne(
      { _id: id, version: doc.version },
      { $set: { outbox: remaining, has_outbox: remaining.length > 0 } },
    );
    if (result.matchedCount === 1) return;
  }
  throw new Error(`outbox of ${id} kept changing`);
}
