// What a proxy hop costs at the least, on this machine, beside nginx (an experiment, not a
// component: nothing here serves traffic). The signals service answers GET /v1/signals/sig_0
// (401 without a token: a small envelope, no store call), reached four ways, interleaved rounds,
// autocannon with 50 connections, medians of req/s and the proxy process's CPU per request:
//   direct · nginx · a raw-socket Node proxy (net both ways, no HTTP library: GET and
//   Content-Length answers only) · node:http + an undici Pool (the gateway's API-path shape,
//   with its security headers, request ids and a JWT-sized upstream header) · node:http in front
//   of the raw upstream pool (which half of the cost is the server's, which the client's) · the
//   raw-socket proxy with its requests pipelined to the service (a turn's in one write).
// Beside the proxy's CPU per request, the service's: pipelining changes what both sides spend.
// Run: source scripts/lib/toolchain.sh && pnpm build && infra/local/infra.sh up >/dev/null &&
//      set -a && . .run/infra.env && set +a && node infra/bench/experiments/proxy-floor.mjs [rounds]
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const require = createRequire(path.join(ROOT, 'infra/bench/package.json'));
const [mode, listenPort, upPort] = process.argv.slice(2);
/** What the gateway adds to an answer beside the security headers: its rate-limit view. */
const RATE_HEADERS = [
  'X-RateLimit-Limit',
  '60',
  'X-RateLimit-Remaining',
  '59',
  'X-RateLimit-Reset',
  '1795445520',
];

/** The next whole answer (Content-Length framed) in the socket's read buffer, taken off it; or undefined. */
function nextAnswer(s) {
  const end = s.inbuf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const len = Number(
    /\r\ncontent-length:\s*(\d+)/i.exec(s.inbuf.subarray(0, end).toString('latin1'))?.[1] ?? 0,
  );
  if (s.inbuf.length < end + 4 + len) return undefined;
  const answer = s.inbuf.subarray(0, end + 4 + len);
  s.inbuf = s.inbuf.subarray(end + 4 + len);
  return answer;
}

/** Upstream: a pool of keep-alive sockets, one request in flight each (GET, Content-Length answers). */
function rawUpstream(upPort) {
  const idle = [];
  const queued = [];
  const release = (s) => (queued.length ? send(s, queued.shift()) : idle.push(s));
  const send = (s, job) => {
    s.job = job;
    s.write(job.head);
  };
  for (let i = 0; i < 64; i++) {
    const s = net.connect({ host: '127.0.0.1', port: Number(upPort), noDelay: true });
    s.inbuf = Buffer.alloc(0);
    s.on('data', (d) => {
      s.inbuf = s.inbuf.length ? Buffer.concat([s.inbuf, d]) : d;
      const answer = s.job && nextAnswer(s);
      if (!answer) return;
      const job = s.job;
      s.job = undefined;
      job.done(answer);
      release(s);
    });
    idle.push(s);
  }
  return (job) => {
    const s = idle.pop();
    if (s) send(s, job);
    else queued.push(job);
  };
}

/**
 * Upstream: `n` keep-alive sockets, requests pipelined: a turn's requests (gathered until
 * setImmediate) go out on the least busy sockets, one write per socket; answers in order.
 */
function pipeUpstream(upPort, n) {
  const conns = [];
  let turn = [];
  let queued = false;
  for (let i = 0; i < n; i++) {
    const s = net.connect({ host: '127.0.0.1', port: Number(upPort), noDelay: true });
    s.inbuf = Buffer.alloc(0);
    s.jobs = [];
    s.on('data', (d) => {
      s.inbuf = s.inbuf.length ? Buffer.concat([s.inbuf, d]) : d;
      while (s.jobs.length) {
        const answer = nextAnswer(s);
        if (!answer) return;
        s.jobs.shift().done(answer);
      }
    });
    conns.push(s);
  }
  const flush = () => {
    queued = false;
    const jobs = turn;
    turn = [];
    const per = new Map();
    for (const job of jobs) {
      let best = conns[0];
      for (const c of conns) if (c.jobs.length < best.jobs.length) best = c;
      best.jobs.push(job);
      const list = per.get(best) ?? [];
      list.push(job.head);
      per.set(best, list);
    }
    for (const [c, heads] of per) c.write(heads.join(''));
  };
  return (job) => {
    turn.push(job);
    if (!queued) {
      queued = true;
      setImmediate(flush);
    }
  };
}

if (mode === 'raw' || mode === 'raw-pipe') {
  const dispatch = mode === 'raw' ? rawUpstream(upPort) : pipeUpstream(upPort, 4);
  const extra = Buffer.from('x-content-type-options: nosniff\r\nx-frame-options: DENY\r\n');
  net
    .createServer({ noDelay: true }, (client) => {
      let inbuf = Buffer.alloc(0);
      client.on('data', (d) => {
        inbuf = inbuf.length ? Buffer.concat([inbuf, d]) : d;
        for (let end = inbuf.indexOf('\r\n\r\n'); end >= 0; end = inbuf.indexOf('\r\n\r\n')) {
          const target = inbuf.subarray(0, inbuf.indexOf('\r\n')).toString('latin1').split(' ')[1];
          inbuf = inbuf.subarray(end + 4);
          const job = {
            head: `GET ${target} HTTP/1.1\r\nhost: up\r\nx-request-id: r\r\n\r\n`,
            done: (answer) => {
              const eol = answer.indexOf('\r\n') + 2;
              client.write(Buffer.concat([answer.subarray(0, eol), extra, answer.subarray(eol)]));
            },
          };
          dispatch(job);
        }
      });
      client.on('error', () => undefined);
    })
    .listen(Number(listenPort), '127.0.0.1');
} else if (mode === 'http-raw') {
  // node:http in front (as the gateway), the raw pool behind: which half of the cost is whose.
  const kit = require(path.join(ROOT, 'packages/service-kit/dist/index.js'));
  const dispatch = rawUpstream(upPort);
  const security = kit.securityHeaderList();
  const token = `Bearer ${'x'.repeat(380)}`;
  http
    .createServer((req, res) => {
      dispatch({
        head: `GET ${req.url} HTTP/1.1\r\nhost: up\r\nx-request-id: req_${randomUUID()}\r\nauthorization: ${token}\r\nx-forwarded-for: 127.0.0.1\r\n\r\n`,
        done: (answer) => {
          const end = answer.indexOf('\r\n\r\n');
          const lines = answer.subarray(0, end).toString('latin1').split('\r\n');
          const out = security.slice();
          out.push(...RATE_HEADERS);
          for (let i = 1; i < lines.length; i++) {
            const colon = lines[i].indexOf(':');
            const name = lines[i].slice(0, colon).toLowerCase();
            if (name !== 'connection' && name !== 'keep-alive' && name !== 'content-length')
              out.push(name, lines[i].slice(colon + 1).trim());
          }
          res.writeHead(Number(lines[0].slice(9, 12)), out);
          res.end(answer.subarray(end + 4));
        },
      });
    })
    .listen(Number(listenPort), '127.0.0.1');
} else if (mode === 'http') {
  const { Pool } = require('undici');
  const kit = require(path.join(ROOT, 'packages/service-kit/dist/index.js'));
  const pool = new Pool(`http://127.0.0.1:${upPort}`, { connections: 64, pipelining: 1 });
  const security = kit.securityHeaderList();
  const token = `Bearer ${'x'.repeat(380)}`;
  http
    .createServer((req, res) => {
      const headers = [
        'x-request-id',
        `req_${randomUUID()}`,
        'authorization',
        token,
        'x-forwarded-for',
        '127.0.0.1',
      ];
      pool.dispatch(
        { method: 'GET', path: req.url, headers, headersTimeout: 10_000, bodyTimeout: 10_000 },
        {
          onRequestStart() {},
          onResponseStart(_c, status, answer) {
            const out = security.slice();
            out.push(...RATE_HEADERS);
            for (const k in answer) if (k !== 'connection' && k !== 'keep-alive') out.push(k, answer[k]);
            res.writeHead(status, out);
          },
          onResponseData(_c, chunk) {
            res.write(chunk);
          },
          onResponseEnd() {
            res.end();
          },
          onResponseError() {
            res.destroy();
          },
        },
      );
    })
    .listen(Number(listenPort), '127.0.0.1');
} else {
  const autocannon = require('autocannon');
  const { TEST_INTERNAL_KEYS } = require(path.join(ROOT, 'packages/test-kit/dist/index.js'));
  const { MONGO_URL, REDIS_URL, AMQP_URL } = process.env;
  if (!MONGO_URL || !REDIS_URL || !AMQP_URL)
    throw new Error('run infra/local/infra.sh up and source .run/infra.env first');
  const rounds = Number(process.argv[2] ?? 3);
  const dir = mkdtempSync(path.join(tmpdir(), 'proxy-floor-'));
  const procs = [];
  const start = (args, env = {}) => {
    const p = spawn(args[0], args.slice(1), { env: { ...process.env, ...env }, stdio: 'ignore' });
    procs.push(p);
    return p;
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const cpuSeconds = (pid) => {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  };
  const prefix = `proxyfloor${Date.now()}`;
  try {
    start([process.execPath, path.join(ROOT, 'services/signals/dist/main.js')], {
      PORT: '4801',
      METRICS_PORT: '4811',
      SIGNALS_DB: prefix,
      AMQP_PREFIX: `${prefix}.`,
      REDIS_PREFIX: `${prefix}:`,
      INTERNAL_JWT_PUBLIC_KEY: TEST_INTERNAL_KEYS.publicKey,
      INGEST_TOKEN: 'proxy-floor-ingest-token-0123456789',
      LOG_LEVEL: 'warn',
    });
    while ((await fetch('http://127.0.0.1:4801/readyz').catch(() => undefined))?.status !== 200)
      await sleep(200);
    writeFileSync(
      path.join(dir, 'nginx.conf'),
      `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections 1024; }
http { access_log off; upstream up { server 127.0.0.1:4801; keepalive 64; }
  server { listen 127.0.0.1:4802; location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; } } }\n`,
    );
    const nginx = start(['/usr/sbin/nginx', '-c', path.join(dir, 'nginx.conf')]);
    const self = fileURLToPath(import.meta.url);
    const raw = start([process.execPath, self, 'raw', '4803', '4801']);
    const viaHttp = start([process.execPath, self, 'http', '4804', '4801']);
    const httpRaw = start([process.execPath, self, 'http-raw', '4805', '4801']);
    const rawPipe = start([process.execPath, self, 'raw-pipe', '4806', '4801']);
    await sleep(1500);
    const nginxWorker = Number(
      execFileSync('pgrep', ['-P', String(nginx.pid)])
        .toString()
        .trim()
        .split('\n')[0],
    );
    const scenarios = [
      ['direct', 4801, undefined],
      ['nginx', 4802, nginxWorker],
      ['raw-socket Node proxy', 4803, raw.pid],
      ['node:http + undici (API-path shape)', 4804, viaHttp.pid],
      ['node:http + raw upstream pool', 4805, httpRaw.pid],
      ['raw-socket Node proxy, pipelined', 4806, rawPipe.pid],
    ];
    const runs = new Map(scenarios.map(([name]) => [name, { rps: [], us: [], service: [] }]));
    const signalsPid = procs[0].pid;
    for (let round = 0; round <= rounds; round++) {
      for (const [name, port, pid] of scenarios) {
        const before = pid ? cpuSeconds(pid) : 0;
        const serviceBefore = cpuSeconds(signalsPid);
        const r = await autocannon({
          url: `http://127.0.0.1:${port}/v1/signals/sig_0`,
          connections: 50,
          duration: 4,
        });
        if (round === 0) continue; // warm-up
        runs.get(name).rps.push(r.requests.average);
        runs
          .get(name)
          .service.push(((cpuSeconds(signalsPid) - serviceBefore) * 1e6) / Math.max(1, r.requests.total));
        runs.get(name).us.push(pid ? ((cpuSeconds(pid) - before) * 1e6) / Math.max(1, r.requests.total) : 0);
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const nginxRps = median(runs.get('nginx').rps);
    console.log(
      `${'path'.padEnd(38)} ${'req/s'.padStart(7)} ${'proxy µs/req'.padStart(13)} ${'service µs/req'.padStart(15)} ${'of nginx'.padStart(9)}`,
    );
    for (const [name, , pid] of scenarios) {
      const { rps, us, service } = runs.get(name);
      console.log(
        `${name.padEnd(38)} ${Math.round(median(rps)).toString().padStart(7)} ${(pid ? Math.round(median(us)).toString() : '—').padStart(13)} ${Math.round(median(service)).toString().padStart(15)} ${(median(rps) / nginxRps).toFixed(2).padStart(9)}`,
      );
    }
  } finally {
    for (const p of procs.reverse()) p.kill('SIGTERM');
    await sleep(1000);
    // The signals service's index keys (no expiry) and its database, gone with the run.
    const kit = require(path.join(ROOT, 'packages/service-kit/dist/index.js'));
    const redis = await kit.connectRedis(REDIS_URL, kit.createLogger('proxy-floor', 'silent'));
    await kit.deleteKeysMatching(redis, `${prefix}:*`);
    redis.disconnect();
    const mongoose = require('mongoose');
    const conn = await mongoose.createConnection(MONGO_URL, { dbName: prefix }).asPromise();
    await conn.dropDatabase();
    await conn.close();
  }
}
