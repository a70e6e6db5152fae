import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { signInternalToken } from '@signal/service-kit';
import { request } from 'undici';
import { summarize } from './cpu-profile';
import Redis from 'ioredis';
import mongoose from 'mongoose';
import { ROOT, SECRETS, arg, infra, load, startService, table, type LoadResult } from './harness';

/**
 * pnpm bench gateway [--seconds 10] [--connections 50]
 * The same route three ways in one run: (a) signals directly, (b) through the gateway with
 * auth + rate limiting, (c) through nginx when installed; ratios b/a and b/c; CPU profile of (b).
 */
async function main() {
  const seconds = arg('seconds', 10);
  const connections = arg('connections', 50);
  const out = path.join(ROOT, 'bench-results');
  mkdirSync(out, { recursive: true });
  const db = `bench_gw_${Date.now()}`;
  const signals = await startService('services/signals/dist/main.js', 4101, {
    SIGNALS_DB: `${db}_signals`,
    AMQP_PREFIX: `${db}.`,
  });
  const profDir = path.join(out, 'gateway-profile');
  rmSync(profDir, { recursive: true, force: true });
  const gateway = await startService(
    'services/api-gateway/dist/main.js',
    4100,
    {
      GATEWAY_DB: `${db}_gateway`,
      REDIS_PREFIX: `${db}:`,
      SIGNALS_URL: signals.url,
      STATS_URL: signals.url,
      WEBHOOKS_URL: signals.url,
    },
    ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
  );
  const nginxConf = path.join(out, 'nginx.conf');
  let nginx: ReturnType<typeof spawn> | undefined;
  try {
    // Seed a few signals and take one id for the route.
    const created = await request(`${signals.url}/internal/signals`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRETS.INGEST_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        token: {
          symbol: 'BENCH',
          name: 'Bench Token',
          contract: 'So1anaBenchContract0001pump',
          age_hours: 2,
          dex_paid: true,
        },
        metrics: { mcap_entry: 100000, volume_24h: 5000, holders: 100, liquidity: 9000 },
        type: 'new',
      }),
    });
    const id = ((await created.body.json()) as { data: { id: string } }).data.id;
    const route = `/v1/signals/${id}`;
    const admin = execFileSync(
      process.execPath,
      [
        path.join(ROOT, 'services/api-gateway/dist/cli/admin.cli.js'),
        'create-account',
        '--email',
        `${db}@bench.local`,
        '--per-minute',
        '100000000',
        '--per-day',
        '1000000000',
      ],
      {
        env: { ...process.env, ...SECRETS, GATEWAY_DB: `${db}_gateway`, REDIS_PREFIX: `${db}:` },
      },
    ).toString();
    const accountId = /account (acc_\S+)/.exec(admin)![1]!;
    const keyOut = execFileSync(
      process.execPath,
      [
        path.join(ROOT, 'services/api-gateway/dist/cli/admin.cli.js'),
        'create-key',
        '--account',
        accountId,
        '--name',
        'bench',
      ],
      {
        env: { ...process.env, ...SECRETS, GATEWAY_DB: `${db}_gateway`, REDIS_PREFIX: `${db}:` },
      },
    ).toString();
    const key = /API key \(shown once\): (\S+)/.exec(keyOut)![1]!;

    const nginxBin = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));
    if (nginxBin) {
      writeFileSync(
        nginxConf,
        `worker_processes 1; daemon off; pid ${out}/nginx.pid; error_log ${out}/nginx-error.log;
events { worker_connections 1024; }
http { access_log off; upstream up { server 127.0.0.1:4101; keepalive 64; }
  server { listen 127.0.0.1:4102; location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; } } }\n`,
      );
      nginx = spawn(nginxBin, ['-c', nginxConf], { stdio: 'ignore' });
      await new Promise((r) => setTimeout(r, 500));
    }
    // Two routes: a real read (MongoDB-wire findById) and one the service answers without a
    // database call (a malformed id → 404), which isolates the HTTP path the gateway adds to.
    const routes: Array<[string, string]> = [
      ['GET /v1/signals/{id} (database read)', route],
      ['GET /v1/signals/sig_0 (404, no database call)', '/v1/signals/sig_0'],
    ];
    for (const [label, path] of routes) {
      const rows: LoadResult[] = [];
      const fresh = {
        authorization: `Bearer ${signInternalToken(SECRETS.INTERNAL_JWT_SECRET, 'signals', accountId, 60)}`,
      };
      await load('warm-up', `${signals.url}${path}`, fresh, 2, connections);
      await load('warm-up', `${gateway.url}${path}`, { authorization: `Bearer ${key}` }, 2, connections);
      rows.push(await load('(a) signals directly', `${signals.url}${path}`, fresh, seconds, connections));
      rows.push(
        await load(
          '(b) through the gateway (auth + rate limit)',
          `${gateway.url}${path}`,
          { authorization: `Bearer ${key}` },
          seconds,
          connections,
        ),
      );
      if (nginxBin)
        rows.push(
          await load(
            '(c) through nginx (proxy only)',
            `http://127.0.0.1:4102${path}`,
            fresh,
            seconds,
            connections,
          ),
        );
      console.log(
        `\n${label} — ${seconds}s each, ${connections} connections; load generator, servers and database share 2 cores\n`,
      );
      table(rows);
      const [a, b, c] = rows;
      console.log(
        `ratio b/a throughput: ${(b!.rps / a!.rps).toFixed(2)} (target ≥ 0.70); p99 added by the gateway: ${(b!.p99 - a!.p99).toFixed(2)} ms (target ≤ 2 ms)`,
      );
      if (c)
        console.log(
          `ratio b/c throughput: ${(b!.rps / c.rps).toFixed(2)}; p99 b−c: ${(b!.p99 - c.p99).toFixed(2)} ms`,
        );
      else console.log('nginx not installed (apt-get install nginx-light): (c) skipped');
    }
  } finally {
    nginx?.kill('SIGTERM');
    await gateway.stop();
    await signals.stop();
    // Leave nothing behind: the bench account's Redis keys and both databases.
    const redis = new Redis(infra().REDIS_URL);
    const keys = await redis.keys(`${db}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    const conn = await mongoose.createConnection(infra().MONGO_URL).asPromise();
    for (const name of [`${db}_signals`, `${db}_gateway`])
      await conn
        .useDb(name)
        .dropDatabase()
        .catch(() => undefined);
    await conn.close();
  }
  const prof = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (prof)
    console.log(`\n${summarize(path.join(profDir, prof))}\n(profile: bench-results/gateway-profile/${prof})`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
