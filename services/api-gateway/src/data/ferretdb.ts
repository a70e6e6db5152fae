import type { Collection, mongo } from 'mongoose';

/**
 * The FerretDB 1.24 workarounds of the gateway's data layer, in one place (ARCHITECTURE.md,
 * "one code path for MongoDB 7+ and FerretDB 1.x"). Each is harmless on MongoDB.
 */

/**
 * `createIndexes` with several indexes of which some exist makes FerretDB close the
 * connection ("connection 1 … closed"), so a second gateway starting on the same database
 * failed. One `createIndex` per index is idempotent on both servers. Shown by
 * test/gateway-auth.test.ts "two gateway instances sharing Redis and MongoDB".
 */
export async function createIndexesOneByOne<T extends mongo.Document>(
  collection: Collection<T>,
  indexes: readonly mongo.IndexDescription[],
): Promise<void> {
  for (const { key, ...options } of indexes) await collection.createIndex(key, options);
}
