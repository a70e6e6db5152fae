import mongoose, { type Connection } from 'mongoose';

/**
 * One connection per service database. Fails fast (no 30 s buffering) so that requests
 * during an outage get a 503 quickly instead of hanging.
 */
export async function connectMongo(url: string, dbName: string): Promise<Connection> {
  const connection = mongoose.createConnection(url, {
    dbName,
    serverSelectionTimeoutMS: 3000,
    connectTimeoutMS: 3000,
    socketTimeoutMS: 20_000,
    maxPoolSize: 20,
    bufferCommands: false,
    autoIndex: false,
    autoCreate: false,
  });
  await connection.asPromise();
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
