import mongoose, { type Connection, type mongo } from 'mongoose';
import type { Logger } from './logger';
import { watchMongoMonitors } from './mongo-watchdog';

/**
 * One connection per service database. Fails fast (no 30 s buffering) so that requests
 * during an outage get a 503 quickly instead of hanging.
 */
export async function connectMongo(url: string, dbName: string, logger?: Logger): Promise<Connection> {
  const timing = { connectTimeoutMS: 3000, heartbeatFrequencyMS: 10_000 };
  const connection = mongoose.createConnection(url, {
    dbName,
    serverSelectionTimeoutMS: 3000,
    ...timing,
    socketTimeoutMS: 20_000,
    maxPoolSize: 20,
    bufferCommands: false,
    autoIndex: false,
    autoCreate: false,
  });
  await connection.asPromise();
  const stopWatching = watchMongoMonitors(connection, timing, logger);
  connection.once('close', stopWatching);
  return connection;
}

/**
 * Creates a collection and its indexes if missing (idempotent, run at start-up). The collection
 * is created explicitly first, so the first concurrent writes never race to create it.
 *
 * Only missing indexes are created, one per command: FerretDB 1.24 panics and drops the
 * connection on a createIndexes of several indexes when some already exist, so a restarted
 * service could never start again on its own database (see the test).
 */
export async function ensureIndexes(
  connection: Connection,
  collection: string,
  indexes: readonly mongo.IndexDescription[] = [],
): Promise<void> {
  try {
    await connection.createCollection(collection);
  } catch (err) {
    if (!isNamespaceExistsError(err)) throw err;
  }
  if (indexes.length === 0) return;
  const target = connection.collection(collection);
  const existing = (await target.listIndexes().toArray()).map((index) => JSON.stringify(index.key));
  for (const index of indexes) {
    if (existing.includes(JSON.stringify(index.key))) continue;
    await target.createIndexes([index]);
  }
}

export async function pingMongo(connection: Connection): Promise<void> {
  const db = connection.db;
  if (!db) throw new Error('not connected');
  await db.command({ ping: 1 });
}

/** Is this a driver error meaning "the database is unreachable" (→ 503)? */
export function isMongoUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    /MongoServerSelectionError|MongoNetworkError|MongoNotConnectedError|MongoTopologyClosedError|MongoNetworkTimeoutError|PoolCleared\w*Error/.test(
      err.name,
    ) ||
    // The last four: a MongoDB-wire server over PostgreSQL (FerretDB, and its wrapper's own
    // commands) whose connections to PostgreSQL ran out or are refused; the store is there but
    // cannot serve now, so the caller retries later.
    /connection .* closed|ECONNREFUSED|Client must be connected|topology was destroyed|socket has been ended by the other party|too many clients|remaining connection slots|SQLSTATE 53300|connect: connection refused/i.test(
      err.message,
    )
  );
}

/**
 * How long the store may take over a read before it stops it with MaxTimeMSExpired
 * (`isStoreTimeLimitExceeded`); none: no limit. A driver read's options take it as it is.
 */
export interface ReadLimit {
  maxTimeMS?: number;
}

/** MongoDB's answer to an operation past its `maxTimeMS` (the embedded store's own commands answer so too). */
const MAX_TIME_MS_EXPIRED = 50;

/**
 * Did the store stop an operation at the time limit it was given (→ 504)? The store is there;
 * the read was larger than its caller would wait for.
 */
export function isStoreTimeLimitExceeded(err: unknown): boolean {
  return errorCode(err) === MAX_TIME_MS_EXPIRED;
}

/** The `code` of a driver error (a server error number), if it has one. */
const errorCode = (err: unknown): unknown =>
  typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;

const isNamespaceExistsError = (err: unknown): boolean => errorCode(err) === 48;

export function isDuplicateKeyError(err: unknown): boolean {
  return errorCode(err) === 11000;
}

/**
 * For an unordered insertMany that failed only on duplicate keys: the positions of the refused
 * documents. Undefined when anything else went wrong (the caller rethrows).
 */
export function duplicateKeyPositions(err: unknown): Set<number> | undefined {
  // Read by shape (the driver's MongoBulkWriteError, or a write error of another driver build)
  // rather than by class: a second copy of the driver in the tree would fail `instanceof`.
  if (typeof err !== 'object' || err === null || !('writeErrors' in err)) return undefined;
  const raw: unknown = err.writeErrors;
  const list: unknown[] = Array.isArray(raw) ? raw : [raw];
  const positions = new Set<number>();
  for (const w of list) {
    if (typeof w !== 'object' || w === null || !('code' in w) || !('index' in w)) return undefined;
    if (w.code !== 11000 || typeof w.index !== 'number') return undefined;
    positions.add(w.index);
  }
  return positions.size > 0 ? positions : undefined;
}

/**
 * Reads by several ids as one equality read per id, in parallel. FerretDB does not push `$in`
 * down to its backend: `{ _id: { $in: ids } }` ships and decodes the whole collection in FerretDB,
 * so reading one page would cost what reading the whole collection does. An equality is pushed
 * down, as `_jsonb->'f' @> value`, which the embedded FerretDB serves from a single-field index's
 * GIN twin (infra/ferretdb/equalityindexes.go). On MongoDB both are index reads.
 */
export function eachById<R>(ids: readonly string[], lookup: (id: string) => Promise<R>): Promise<R[]> {
  return Promise.all(ids.map(lookup));
}
