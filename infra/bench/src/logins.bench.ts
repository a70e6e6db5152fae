import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseCliArgs, readCommandLine } from '@signal/service-kit';
import { Agent, request } from 'undici';
import {
  ROOT,
  SECRETS,
  benchApiKey,
  benchRedis,
  dropBenchData,
  load,
  startService,
  wholeNumberOption,
  type LoadResult,
  type Proc,
} from './harness';

/**
 * pnpm bench logins [--seconds 8] [--rounds 3] [--flooders 16] [--connections 20]
 *
 * What a login flood takes from the API's consumers. One account's client logs in again and
 * again with its right password (`--flooders` loops, each sending the next login as soon as the
 * last is answered, or after its Retry-After when told to wait) while another account's API key reads through the same
 * gateway process (autocannon, `--connections`, GET /v1/signals/sig_0: a 404 the signals service
 * answers without a store call). Two gateways, interleaved round by round (medians):
 *   (b) as production runs it: one password hash at a time (PASSWORD_HASHES_AT_ONCE=1),
 *   (u) the hashing unbounded as before 2026-11-27: as many at once as libuv's threadpool runs
 *       (PASSWORD_HASHES_AT_ONCE=4, nothing refused for waiting).
 * Each row: the API's req/s and p99 alone, then during the flood, and the logins answered 200 a
 * second. The figure is the API's req/s during the flood against alone, each gateway's own.
 */
const CLI = {
  name: 'logins bench',
  usage: 'usage: pnpm bench logins [--seconds 8] [--rounds 3] [--flooders 16] [--connections 20]',
};
const opts = readCommandLine(CLI, () =>
  parseCliArgs(process.argv.slice(2), {
    seconds: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
    flooders: { type: 'string', default: '16' },
    connections: { type: 'string', default: '20' },
  }),
);
const seconds = wholeNumberOption(CLI, opts, 'seconds');
const rounds = wholeNumberOption(CLI, opts, 'rounds');
const flooders = wholeNumberOption(CLI, opts, 'flooders');
const connections = wholeNumberOption(CLI, opts, 'connections');

const PASSWORD = 'bench password, long enough';

/** An account with a password (the operator CLI), to log in as. */
function accountWithPassword(gatewayDb: string, redisPrefix: string, email: string): void {
  execFileSync(
    process.execPath,
    [
      path.join(ROOT, 'services/api-gateway/dist/cli/admin.cli.js'),
      'create-account',
      '--email',
      email,
      '--password',
      PASSWORD,
    ],
    { env: { ...process.env, ...SECRETS, GATEWAY_DB: gatewayDb, REDIS_PREFIX: redisPrefix } },
  );
}

interface Flood {
  /** Logins answered 200, and every answer, so far. */
  ok: number;
  answered: number;
  stop(): Promise<void>;
}

/** `flooders` loops logging in with the right password, each as soon as the last is answered. */
function flood(url: string, email: string): Flood {
  const agent = new Agent({ connections: flooders });
  const state = { ok: 0, answered: 0, running: true };
  const body = JSON.stringify({ email, password: PASSWORD });
  const loop = async () => {
    while (state.running) {
      const res = await request(`${url}/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        dispatcher: agent,
      }).catch(() => undefined);
      if (!res) continue;
      await res.body.dump();
      state.answered += 1;
      if (res.statusCode === 200) state.ok += 1;
      // Told to retry later (its turn refused), it does: what is measured is the hashing, not a
      // flood of refusals any route would answer alike.
      const retryAfter = Number(res.headers['retry-after']);
      if (res.statusCode >= 429 && retryAfter > 0) await new Promise((r) => setTimeout(r, retryAfter * 1000));
    }
  };
  const loops = Array.from({ length: flooders }, loop);
  return {
    get ok() {
      return state.ok;
    },
    get answered() {
      return state.answered;
    },
    async stop() {
      state.running = false;
      await Promise.all(loops);
      await agent.close();
    },
  };
}

interface Row {
  alone: LoadResult;
  flooded: LoadResult;
  loginsPerSecond: number;
  answersPerSecond: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
};

async function main() {
  const db = `bench_logins_${Date.now()}`;
  const started: Proc[] = [];
  const redis = benchRedis();
  try {
    const signals = await startService('services/signals/dist/main.js', 4101, {
      SIGNALS_DB: `${db}_signals`,
      AMQP_PREFIX: `${db}.`,
      REDIS_PREFIX: `${db}:`,
    });
    started.push(signals);
    const { key } = benchApiKey(`${db}_gateway`, `${db}:`, `reader-${db}@bench.local`);
    const flooderEmail = `flooder-${db}@bench.local`;
    accountWithPassword(`${db}_gateway`, `${db}:`, flooderEmail);
    const gatewayEnv = {
      GATEWAY_DB: `${db}_gateway`,
      REDIS_PREFIX: `${db}:`,
      SIGNALS_URL: signals.url,
      STATS_URL: signals.url,
      WEBHOOKS_URL: signals.url,
      GATEWAY_WORKERS: '1',
      // The flood's answers are counted against its address; the reader's key never is.
      IP_RATE_LIMIT_PER_MINUTE: '1000000',
    };
    const specs: Array<{ id: string; name: string; port: number; env: Record<string, string> }> = [
      { id: 'b', name: '(b) one hash at a time (production)', port: 4110, env: {} },
      {
        id: 'u',
        name: '(u) hashing unbounded (as before)',
        port: 4111,
        env: {
          PASSWORD_HASHES_AT_ONCE: '4',
          PASSWORD_HASHES_WAITING: '100000',
          PASSWORD_HASHES_WAITING_PER_CLIENT: '100000',
        },
      },
    ];
    const gateways = await Promise.all(
      specs.map((s) =>
        startService('services/api-gateway/dist/main.js', s.port, { ...gatewayEnv, ...s.env }),
      ),
    );
    started.push(...gateways);
    const headers = { authorization: `Bearer ${key}` };
    const rows = new Map<string, Row[]>(specs.map((s) => [s.id, []]));
    for (let round = 1; round <= rounds; round++) {
      for (const [i, spec] of specs.entries()) {
        const url = gateways[i]!.url;
        const route = `${url}/v1/signals/sig_0`;
        const alone = await load(`${spec.id} alone`, route, headers, seconds, connections);
        const flooding = flood(url, flooderEmail);
        // The flood at its pace before the API's load is measured.
        await new Promise((r) => setTimeout(r, 1000));
        const before = { ok: flooding.ok, answered: flooding.answered };
        const flooded = await load(`${spec.id} flooded`, route, headers, seconds, connections);
        const loginsPerSecond = (flooding.ok - before.ok) / seconds;
        const answersPerSecond = (flooding.answered - before.answered) / seconds;
        await flooding.stop();
        rows.get(spec.id)!.push({ alone, flooded, loginsPerSecond, answersPerSecond });
        process.stderr.write(
          `round ${round} ${spec.id}: API ${alone.rps.toFixed(0)} req/s alone, ${flooded.rps.toFixed(0)} flooded; logins ${loginsPerSecond.toFixed(1)}/s\n`,
        );
      }
    }
    console.log(
      `\nAPI key reads (GET /v1/signals/sig_0, ${connections} connections) while one account logs in with ${flooders} loops — ${rounds} rounds × ${seconds}s (medians)\n`,
    );
    console.log(
      'gateway                                    API req/s alone  flooded  ratio  p99 ms alone  flooded  logins 200/s  answers/s',
    );
    const ratios: Record<string, number> = {};
    for (const spec of specs) {
      const r = rows.get(spec.id)!;
      const alone = median(r.map((x) => x.alone.rps));
      const flooded = median(r.map((x) => x.flooded.rps));
      ratios[spec.id] = flooded / alone;
      console.log(
        `${spec.name.padEnd(42)} ${alone.toFixed(0).padStart(15)} ${flooded.toFixed(0).padStart(8)} ${(flooded / alone).toFixed(2).padStart(6)} ${median(
          r.map((x) => x.alone.p99),
        )
          .toFixed(0)
          .padStart(13)} ${median(r.map((x) => x.flooded.p99))
          .toFixed(0)
          .padStart(8)} ${median(r.map((x) => x.loginsPerSecond))
          .toFixed(1)
          .padStart(13)} ${median(r.map((x) => x.answersPerSecond))
          .toFixed(0)
          .padStart(10)}`,
      );
    }
    console.log(
      `logins: API req/s during a login flood ${ratios.b?.toFixed(2)}× alone with one hash at a time, ${ratios.u?.toFixed(2)}× with hashing unbounded (same run)`,
    );
    console.log(
      `load average at end: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
  } finally {
    await Promise.all(started.map((p) => p.stop()));
    await dropBenchData(db, redis, [`${db}_signals`, `${db}_gateway`]);
    redis.disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
