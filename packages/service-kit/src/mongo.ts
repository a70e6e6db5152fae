import mongoose, { type Connection } from 'mongoose';
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

export async function pingMongo(connection: Connection): Promise<void> {
  const db = connection.db;
  if (!db) throw new Error('not connected');
  await db.command({ ping: 1 });
}

/** Is this a driver error meaning "the database is unreachable" (→ 503)? */
export function isMongoUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    /MongoServerSelectionError|MongoNetworkError|MongoNotConnectedError|MongoTopologyClosedError|MongoNetworkTimeoutError|PoolClearedError/.test(
      err.name,
    ) ||
    /connection .* closed|ECONNREFUSED|Client must be connected|topology was destroyed/i.test(err.message)
  );
}

interface WriteError {
  code?: number;
  index?: number;
  err?: { code?: number; index?: number };
}

export function isDuplicateKeyError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000;
}

/**
 * For an unordered insertMany that failed only on duplicate keys: the positions of the refused
 * documents. Undefined when anything else went wrong (the caller rethrows).
 */
export function duplicateKeyPositions(err: unknown): Set<number> | undefined {
  const writeErrors = (err as { writeErrors?: WriteError[] })?.writeErrors;
  if (!writeErrors || writeErrors.some((w) => (w.code ?? w.err?.code) !== 11000)) return undefined;
  return new Set(writeErrors.map((w) => w.index ?? w.err?.index).filter((i): i is number => i !== undefined));
}
