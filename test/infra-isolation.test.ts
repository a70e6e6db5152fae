import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import mongoose from 'mongoose';

/**
 * The run command (`bash scripts/up.sh`, infra instance "run"), the test command (instance "test")
 * and the benches (instance "bench") in one checkout: each gets its own MongoDB-wire server and
 * database, and stopping the tests' or a bench's infrastructure leaves the run's server and data
 * alone. Driven on a copy of infra/local/infra.sh in a checkout of its own (a temporary directory),
 * so this test never meets the state of the checkout it runs in.
 */
const ROOT = path.join(__dirname, '..');
const run = promisify(execFile);

function mongoUrlOf(printed: string): string {
  const url = /^MONGO_URL=(\S+)$/m.exec(printed)?.[1];
  if (!url) throw new Error(`infra.sh up printed no MONGO_URL:\n${printed}`);
  return url;
}

async function withDb<T>(
  url: string,
  dbName: string,
  fn: (db: mongoose.Connection) => Promise<T>,
): Promise<T> {
  const conn = await mongoose.createConnection(url, { dbName, serverSelectionTimeoutMS: 5000 }).asPromise();
  try {
    return await fn(conn);
  } finally {
    await conn.close();
  }
}

describe('infrastructure instances of one checkout (infra/local/infra.sh)', () => {
  let checkout: string;
  const infra = (args: string[], env: Record<string, string> = {}) =>
    run('bash', [path.join(checkout, 'infra', 'local', 'infra.sh'), ...args], {
      env: { ...process.env, MONGO_URL: '', ...env },
      timeout: 120_000,
    });

  beforeAll(() => {
    checkout = mkdtempSync(path.join(tmpdir(), 'infra-isolation-'));
    mkdirSync(path.join(checkout, 'infra', 'local'), { recursive: true });
    cpSync(path.join(ROOT, 'infra', 'local', 'infra.sh'), path.join(checkout, 'infra', 'local', 'infra.sh'));
    // The FerretDB wrapper's sources: infra.sh finds its built binary by their hash (cached).
    const ferret = path.join(ROOT, 'infra', 'ferretdb');
    mkdirSync(path.join(checkout, 'infra', 'ferretdb'));
    for (const f of readdirSync(ferret).filter((n) => /^go\.(mod|sum)$|\.go$/.test(n)))
      cpSync(path.join(ferret, f), path.join(checkout, 'infra', 'ferretdb', f));
  });

  afterAll(async () => {
    await infra(['down']).catch(() => undefined);
    await infra(['down'], { INFRA_INSTANCE: 'bench' }).catch(() => undefined);
    await infra(['reset'], { INFRA_PERSIST: '1' }).catch(() => undefined);
    rmSync(checkout, { recursive: true, force: true });
  });

  it('when the tests and a bench start and stop their infrastructure beside a running system, then the system keeps its server and its data', async () => {
    const system = mongoUrlOf((await infra(['up'], { INFRA_PERSIST: '1' })).stdout);
    await withDb(system, 'kept', (db) => db.collection('accounts').insertOne({ _id: 'acc_kept' as never }));

    const tests = mongoUrlOf((await infra(['up'])).stdout);
    const bench = mongoUrlOf((await infra(['up'], { INFRA_INSTANCE: 'bench' })).stdout);
    expect(new Set([system, tests, bench]).size).toBe(3);
    // The tests' own server: the system's data is not there, and what the tests write stays there.
    expect(await withDb(tests, 'kept', (db) => db.collection('accounts').countDocuments())).toBe(0);
    await withDb(tests, 'kept', (db) => db.collection('accounts').insertOne({ _id: 'acc_test' as never }));
    expect(readFileSync(path.join(checkout, '.run', 'infra.env'), 'utf8')).toContain(`MONGO_URL=${tests}`);
    expect(readFileSync(path.join(checkout, '.run', 'infra-run.env'), 'utf8')).toContain(
      `MONGO_URL=${system}`,
    );

    await infra(['down']);
    await infra(['down'], { INFRA_INSTANCE: 'bench' });

    const ids = await withDb(system, 'kept', (db) =>
      db
        .collection('accounts')
        .find({})
        .map((d) => String(d._id))
        .toArray(),
    );
    expect(ids).toEqual(['acc_kept']);

    // And the run's own `down`/`up` keeps its data (INFRA_PERSIST): the kept database is reused.
    await infra(['down'], { INFRA_PERSIST: '1' });
    const again = mongoUrlOf((await infra(['up'], { INFRA_PERSIST: '1' })).stdout);
    expect(await withDb(again, 'kept', (db) => db.collection('accounts').countDocuments())).toBe(1);
  }, 180_000);
});
