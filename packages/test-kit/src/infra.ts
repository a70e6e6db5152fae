import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';
import pino from 'pino';

export interface InfraUrls {
  mongoUrl: string;
  redisUrl: string;
  amqpUrl: string;
}

/** URLs of the real services the tests talk to (set by test/global-setup.js from .run/infra.env). */
export function infraUrls(): InfraUrls {
  if (process.env.TEST_TIER === 'unit')
    throw new Error(
      'a unit test uses no infrastructure: move this test to the integration tier (jest.config.js)',
    );
  const { MONGO_URL, REDIS_URL, AMQP_URL } = process.env;
  if (!MONGO_URL || !REDIS_URL || !AMQP_URL) {
    throw new Error(
      'MONGO_URL, REDIS_URL and AMQP_URL must be set: run `bash scripts/test.sh` or `infra/local/infra.sh up`',
    );
  }
  return { mongoUrl: MONGO_URL, redisUrl: REDIS_URL, amqpUrl: AMQP_URL };
}

/** A name no other test file (or run) uses: `<prefix>_<pid>_<random>`. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

export const silentLogger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export interface TestDatabase {
  url: string;
  dbName: string;
  drop(): Promise<void>;
}

/** A database of this test file's own; `drop()` removes it. */
export function testDatabase(prefix: string): TestDatabase {
  const { mongoUrl } = infraUrls();
  const dbName = uniqueName(`t_${prefix}`).replace(/[^A-Za-z0-9_]/g, '_');
  return {
    url: mongoUrl,
    dbName,
    async drop() {
      const conn = await mongoose
        .createConnection(mongoUrl, { dbName, serverSelectionTimeoutMS: 5000 })
        .asPromise();
      try {
        await conn.dropDatabase();
      } finally {
        await conn.close();
      }
    },
  };
}

/** Removes every queue and exchange a prefix owns (`removeBrokerPrefix` of @signal/messaging). */
export type BrokerPrefixRemover = (amqpUrl: string, prefix: string, extraQueues: string[]) => Promise<void>;

/**
 * A prefix for exchanges and queues, plus the clean-up of everything under it. The clean-up is
 * given (messaging's `removeBrokerPrefix`): the topology is messaging's, and messaging's own
 * tests use this kit.
 */
export function testBrokerPrefix(
  label: string,
  remove: BrokerPrefixRemover,
): {
  prefix: string;
  cleanup(extraQueues?: string[]): Promise<void>;
} {
  const prefix = `${uniqueName(`t.${label}`)}.`;
  return {
    prefix,
    cleanup: (extraQueues: string[] = []) => remove(infraUrls().amqpUrl, prefix, extraQueues),
  };
}

/**
 * A wait's deadline is never shorter than this: a deadline fails only a hung run, and a machine
 * loaded by other work (the stress run's CPU hog, other jobs beside) takes many times as long
 * as a quiet one for what a test waits on.
 */
export const HUNG_AFTER_MS = 60_000;

/**
 * Polls until `check` returns a truthy value; fails when it has not after `timeoutMs` (at least
 * HUNG_AFTER_MS: the figure a test names is how long it expects on a quiet machine).
 */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  timeoutMs = 10_000,
  intervalMs = 50,
  what = 'condition',
): Promise<Exclude<T, undefined | null | false | '' | 0>> {
  timeoutMs = Math.max(timeoutMs, HUNG_AFTER_MS);
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as Exclude<T, undefined | null | false | '' | 0>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Can a server listen on this loopback port now? */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * A free port below Linux's ephemeral range (32768–60999), for a process that is killed and
 * started again on the same port: a port from listen(0) lies in that range, where any outgoing
 * connection may take it as its source port meanwhile and hold it for as long as the restarted
 * process keeps trying to start.
 */
export async function stablePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  return freePort();
}

/**
 * `count` different ports from `stablePort`, for processes started together: each port is only
 * checked free and let go, so two draws can name the same port (an observability run gave the
 * gateway and the webhooks API's metrics endpoint one port: EADDRINUSE).
 */
export async function stablePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await stablePort());
  return [...ports];
}

/** A TCP port free on loopback right now (for child processes that must listen on a known port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * Whether the MongoDB-wire server behind `connection` is FerretDB (its buildInfo carries
 * `ferretdbVersion`) rather than MongoDB: the FerretDB workaround tests show the behaviour
 * they work around on FerretDB and check the same code on MongoDB.
 */
export async function isFerretDB(connection: mongoose.Connection): Promise<boolean> {
  const db = connection.db;
  if (!db) throw new Error('not connected');
  return 'ferretdbVersion' in (await db.command({ buildInfo: 1 }));
}
