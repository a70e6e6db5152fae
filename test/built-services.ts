import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import mongoose from 'mongoose';
import { connectRedis, deleteKeysMatching } from '@signal/service-kit';
import { infraUrls, silentLogger } from '@signal/test-kit';

/** Running the services from their built output, as a deployment does (process-level tests). */
const ROOT = path.join(__dirname, '..');

export interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Starts `entry` (e.g. services/signals/dist/main.js) with exactly `env` (plus PATH). */
export function runBuilt(entry: string, env: Record<string, string>, args: string[] = []): Running {
  const file = path.join(ROOT, entry);
  if (!existsSync(file)) throw new Error(`${entry} is not built: run "pnpm build" (scripts/test.sh does)`);
  const child = spawn(process.execPath, [file, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

export async function isReady(port: number): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
  return res?.status === 200;
}

/** The machine's infrastructure, with this test's broker and Redis prefix. */
export function infraEnv(prefix: string): Record<string, string> {
  const { mongoUrl, redisUrl, amqpUrl } = infraUrls();
  return {
    MONGO_URL: mongoUrl,
    REDIS_URL: redisUrl,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    REDIS_PREFIX: prefix,
  };
}

/** Drops `<db>_<service>` for every service (what a process-level test created). */
export async function dropServiceDatabases(db: string): Promise<void> {
  const conn = await mongoose.createConnection(infraUrls().mongoUrl).asPromise();
  for (const suffix of ['signals', 'stats', 'webhooks', 'gateway'])
    await conn
      .useDb(`${db}_${suffix}`)
      .dropDatabase()
      .catch(() => undefined);
  await conn.close();
}

/**
 * Deletes every Redis key under `prefix` (what the processes of a process-level test wrote):
 * read models, plans and revocation sets carry no expiry and would stay behind on the machine.
 */
export async function dropRedisKeys(prefix: string): Promise<void> {
  const redis = await connectRedis(infraUrls().redisUrl, silentLogger);
  try {
    await deleteKeysMatching(redis, `${prefix}*`);
  } finally {
    redis.disconnect();
  }
}
