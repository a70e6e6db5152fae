import { spawn } from 'node:child_process';
import { get, createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import mongoose from 'mongoose';
import { Pool } from 'undici';
import { ROUTES, SIGNAL_STREAM_PATH, STREAM_PREAMBLE } from '@signal/contracts';
import { deleteKeysMatching, parseCliArgs, readCommandLine } from '@signal/service-kit';
import {
  SECRETS,
  benchApiKey,
  benchInternalToken,
  benchRedis,
  dropBrokerPrefix,
  infra,
  percentile,
  startService,
  wholeNumberOption,
  type Proc,
} from './harness';

/**
 * pnpm bench stream [--streams 10000] [--rate 2] [--seconds 20] [--floor-first]
 *
 * --streams concurrent live streams (GET /v1/signals/stream) through the gateway (two gateway
 * processes, node:cluster: one process holds at most ~20,000 open files here), every stream
 * taking every event; --rate signals a second ingested for --seconds, so every stream gets
 * --rate events a second. Measured in one run:
 *   - publish → client: from the ingest request's start to each stream's receipt of that
 *     signal's `signal.new` event, p50 / p99 / max over every (event, stream) pair, and how
 *     many pairs never arrived;
 *   - memory per open stream: the growth of resident memory (VmRSS) of the gateway processes
 *     and of the signals service from before the streams opened to once all are open (2 s
 *     later), and again at the end of the run, divided by --streams;
 *   - the baseline: the webhooks worker's publish → receipt for the same events, to one
 *     subscriber on loopback (one delivery per event: with --rate × --seconds under 100 events,
 *     its p99 is their maximum, which the output says);
 *   - the floor: a bare node:http server (one process, no framework) holding --streams
 *     event-stream responses with the gateway's own response headers (as the first stream got
 *     them) and preamble, its resident memory growth per stream measured as ours is; and the
 *     same server as the gateway runs, in as many processes (node:cluster), each holding its
 *     share: every process has its own young generation, which the admission of thousands of
 *     streams grows to V8's cap, a cost per process rather than per stream;
 *   - the latency floor: each floor server, once its streams are open, is fed by the signals
 *     service's stream as a gateway process is (one subscription per process) and writes each
 *     event to every response with `res.write`; the bench publishes as many new signals again and
 *     measures publish → client with the same client code, beside the webhook baseline of those
 *     events. The floors run after ours, or before with --floor-first (not beside: one set of
 *     2 × --streams sockets would measure the bench's own reading twice over), so each phase is
 *     printed with its own baseline.
 * Targets: gateway + signals ≤ 1.5× the floor per stream; stream p99 ≤ the webhook baseline's p99.
 */
const CLI = {
  name: 'stream bench',
  usage: 'usage: pnpm bench stream [--streams 10000] [--rate 2] [--seconds 20] [--floor-first]',
};
const opts = readCommandLine(CLI, () =>
  parseCliArgs(process.argv.slice(2), {
    streams: { type: 'string', default: '10000' },
    rate: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '20' },
    'floor-first': { type: 'boolean', default: false },
  }),
);
const streams = wholeNumberOption(CLI, opts, 'streams');
const rate = wholeNumberOption(CLI, opts, 'rate');
const seconds = wholeNumberOption(CLI, opts, 'seconds');
const floorFirst = opts['floor-first'] === true;

const rssKb = (pid: number): number => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
};
/** A process and its children (the cluster's workers). */
const treeRssKb = (pid: number): number => {
  let total = rssKb(pid);
  try {
    for (const task of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' '))
      if (task) total += treeRssKb(Number(task));
  } catch {
    // gone
  }
  return total;
};

interface Client {
  /** signal id → receipt time (ms) */
  seen: Map<string, number>;
  /** The response's headers as sent: [name, value, …]. */
  rawHeaders: string[];
  close(): void;
}

/** One stream: parses `data:` lines of `signal.new` events and records when each signal arrived. */
function openStream(url: string, key: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const seen = new Map<string, number>();
    const req = get(
      `${url}${ROUTES.streamSignals.path}?events=signal.new`,
      { headers: { authorization: `Bearer ${key}` }, agent: false },
      (res: IncomingMessage) => {
        if (res.statusCode !== 200) {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.once('end', () => reject(new Error(`stream responded ${res.statusCode}: ${body}`)));
          return;
        }
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const now = Date.now();
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) !== -1) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = /^data: (.*)$/m.exec(event)?.[1];
            if (!data) continue;
            const id = /"id":"(sig_[^"]+)"/.exec(data)?.[1];
            if (id && !seen.has(id)) seen.set(id, now);
          }
        });
        resolve({ seen, rawHeaders: res.rawHeaders, close: () => req.destroy() });
      },
    );
    req.once('error', reject);
  });
}

/** Headers node:http writes itself: left to the floor server to write as it does for ours. */
const NODE_OWN_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

/** The gateway processes the bench runs (node:cluster workers). */
const GATEWAY_WORKERS = 2;

/** What a floor run measured. */
interface FloorRun {
  /** Resident memory growth (all its processes) per stream, in KB, 2 s after all opened. */
  kbPerStream: number;
  /** The events published while the floor held its streams: signal id → publish time (ms). */
  published: Map<string, number>;
  /** Publish → client over every (event, stream) pair, sorted; pairs that never arrived. */
  latencies: number[];
  missing: number;
}

/**
 * The floor: a bare node:http server in its own process (or `workers` processes under
 * node:cluster, as the gateway runs) holding `count` event-stream responses, each sent `headers`
 * ([name, value, …]) and the preamble. Each process reads the signals service's live stream as a
 * gateway process does (`feed`: one subscription per process, no filter) and writes every event
 * it receives, as the service framed it, to each of its responses with `res.write` (one Buffer per
 * event, node:http framing each chunk, as the gateway writes); a heartbeat every 15 s goes only to
 * responses sent no event since the last one (as the gateway's goes only to idle clients). The
 * growth of its resident memory from before the streams opened to 2 s after they all are, per
 * stream; then `publish` runs and every stream's receipts are read as ours are (same client).
 */
async function floorRun(
  count: number,
  headers: string[],
  workers: number,
  feed: { url: string; token: string },
  publish: () => Promise<Map<string, number>>,
): Promise<FloorRun> {
  const script = `
    const cluster = require('node:cluster');
    const workers = Number(process.env.FLOOR_WORKERS);
    if (workers > 1 && cluster.isPrimary) {
      let ready = 0;
      for (let i = 0; i < workers; i++)
        cluster.fork().on('message', (port) => {
          if (++ready === workers) process.stdout.write(port + '\\n');
        });
      return;
    }
    const http = require('node:http');
    const head = JSON.parse(process.env.FLOOR_HEAD);
    const open = new Set();
    let sent = false;
    const server = http.createServer((req, res) => {
      res.writeHead(200, head);
      res.write(process.env.FLOOR_PREAMBLE);
      open.add(res);
      res.once('close', () => open.delete(res));
    });
    server.maxConnections = Infinity;
    server.keepAliveTimeout = 0;
    server.requestTimeout = 0;
    server.headersTimeout = 0;
    setInterval(() => {
      if (sent) sent = false;
      else for (const res of open) res.write(':\\n\\n');
    }, 15000).unref();
    const feeding = new Promise((resolve) => {
      const req = http.get(
        process.env.FLOOR_FEED_URL,
        { headers: { accept: 'text/event-stream', authorization: 'Bearer ' + process.env.FLOOR_FEED_TOKEN } },
        (up) => {
          if (up.statusCode !== 200) {
            console.error('floor feed: the service responded ' + up.statusCode);
            process.exit(1);
          }
          up.setEncoding('utf8');
          let buffer = '';
          up.on('data', (chunk) => {
            buffer += chunk;
            let end;
            while ((end = buffer.indexOf('\\n\\n')) !== -1) {
              const frame = buffer.slice(0, end + 2);
              buffer = buffer.slice(end + 2);
              // Events only: the service's own preamble and heartbeats are not the clients'.
              if (!/^(id|event|data):/.test(frame)) continue;
              const bytes = Buffer.from(frame);
              for (const res of open) res.write(bytes);
              sent = true;
            }
          });
          up.once('end', () => {
            console.error('floor feed: the service ended the stream');
            process.exit(1);
          });
          resolve();
        },
      );
      req.once('error', (err) => {
        console.error('floor feed: ' + err.message);
        process.exit(1);
      });
    });
    server.listen(0, '127.0.0.1', () => {
      const port = server.address().port;
      feeding.then(() => {
        if (process.send) process.send(port);
        else process.stdout.write(port + '\\n');
      });
    });`;
  // A script of its own (not -e): node:cluster forks workers from the primary's script.
  const file = path.join(tmpdir(), `stream-floor-${process.pid}.js`);
  writeFileSync(file, `(() => {${script}})();`);
  const child = spawn(process.execPath, [file], {
    env: {
      PATH: process.env.PATH ?? '',
      FLOOR_HEAD: JSON.stringify(headers),
      FLOOR_PREAMBLE: STREAM_PREAMBLE,
      FLOOR_WORKERS: String(workers),
      FLOOR_FEED_URL: feed.url,
      FLOOR_FEED_TOKEN: feed.token,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const held: Client[] = [];
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.once('data', (b: Buffer) => resolve(Number(b.toString().trim())));
      child.once('exit', (code) => reject(new Error(`floor server exited with ${code}`)));
    });
    await new Promise((r) => setTimeout(r, 500));
    const before = treeRssKb(child.pid!);
    for (let i = 0; i < count; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, count - i) }, () =>
          openStream(`http://127.0.0.1:${port}`, 'floor'),
        ),
      );
      held.push(...batch);
    }
    await new Promise((r) => setTimeout(r, 2000));
    const kbPerStream = (treeRssKb(child.pid!) - before) / count;
    const published = await publish();
    return { kbPerStream, published, ...receipts(published, held) };
  } finally {
    for (const c of held) c.close();
    await new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
    rmSync(file, { force: true });
  }
}

/** Publish → client over every (event, stream) pair, sorted, and the pairs that never arrived. */
function receipts(
  published: Map<string, number>,
  clients: readonly Client[],
): { latencies: number[]; missing: number } {
  const latencies: number[] = [];
  let missing = 0;
  for (const [id, at] of published)
    for (const c of clients) {
      const got = c.seen.get(id);
      if (got === undefined) missing += 1;
      else latencies.push(got - at);
    }
  latencies.sort((a, b) => a - b);
  return { latencies, missing };
}

function signalInput(n: number) {
  return {
    token: {
      symbol: `STR${n}`,
      name: `Stream Bench ${n}`,
      contract: `So1anaStreamBench${String(n).padStart(10, '0')}pump`,
      age_hours: 1,
      dex_paid: true,
    },
    metrics: { mcap_entry: 100000, volume_24h: 5000, holders: 100, liquidity: 9000 },
    type: 'new',
  };
}

async function main() {
  const db = `bench_stream_${Date.now()}`;
  const prefix = `${db}.`;
  const redisPrefix = `${db}:`;
  const started: Proc[] = [];
  const redis = benchRedis();
  const clients: Client[] = [];
  const webhookSeen = new Map<string, number>();
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const id = /"id":"(sig_[^"]+)"/.exec(body)?.[1];
      if (id && !webhookSeen.has(id)) webhookSeen.set(id, Date.now());
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  try {
    const shared = { AMQP_PREFIX: prefix, REDIS_PREFIX: redisPrefix };
    const signals = await startService('services/signals/dist/main.js', 4601, {
      ...shared,
      SIGNALS_DB: `${db}_signals`,
    });
    started.push(signals);
    const hooksEnv = { ...shared, WEBHOOKS_DB: `${db}_webhooks`, WEBHOOK_ALLOW_LOOPBACK_URLS: 'true' };
    started.push(await startService('services/webhooks/dist/main.js', 4602, hooksEnv));
    started.push(await startService('services/webhooks/dist/worker.js', 4603, hooksEnv));
    const { accountId, key } = benchApiKey(`${db}_gateway`, redisPrefix, `${db}@bench.local`);
    const conn = await mongoose.createConnection(infra().MONGO_URL).asPromise();
    await conn
      .useDb(`${db}_gateway`)
      .collection<{ _id: string }>('accounts')
      .updateOne({ _id: accountId }, { $set: { 'plan.max_streams': streams + 10 } });
    await conn.close();
    const gateway = await startService('services/api-gateway/dist/main.js', 4600, {
      GATEWAY_DB: `${db}_gateway`,
      REDIS_PREFIX: redisPrefix,
      SIGNALS_URL: signals.url,
      STATS_URL: signals.url,
      WEBHOOKS_URL: 'http://127.0.0.1:4602',
      GATEWAY_WORKERS: String(GATEWAY_WORKERS),
      // Every stream comes from this one address. Each process holds half the bound, and node:cluster
      // hands a connection to whichever process is free first, not strictly in turn: room for all
      // in either process.
      CLIENT_MAX_CONNECTIONS: String(2 * streams + 100),
    });
    started.push(gateway);
    const api = new Pool(gateway.url, { connections: 4 });
    const created = await api.request({
      method: 'POST',
      path: ROUTES.createWebhook.path,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
        events: ['signal.new'],
      }),
    });
    if (created.statusCode !== 201)
      throw new Error(`webhook: ${created.statusCode} ${await created.body.text()}`);
    await created.body.dump();

    const ingest = new Pool(signals.url, { connections: 2 });
    const total = rate * seconds;
    /**
     * Publishes --rate signals a second for --seconds (the `phase`-th batch: each signal is a new
     * one), then waits a few seconds for the last to arrive everywhere: signal id → the start of
     * its ingest request.
     */
    const publish = async (phase: number): Promise<Map<string, number>> => {
      const published = new Map<string, number>();
      // The load generator's own garbage from opening the streams is collected first (as every
      // bench's timed rows start): a pause of its own would be stamped on the receipts of both
      // paths.
      globalThis.gc?.();
      const startAt = Date.now();
      for (let n = 0; n < total; n++) {
        const due = startAt + (n * 1000) / rate;
        await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
        const at = Date.now();
        const res = await ingest.request({
          method: 'POST',
          path: '/internal/signals',
          headers: { authorization: `Bearer ${SECRETS.INGEST_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(signalInput(phase * total + n)),
        });
        const body = (await res.body.json()) as { data?: { id?: string } };
        if (body.data?.id) published.set(body.data.id, at);
      }
      await new Promise((r) => setTimeout(r, 5000));
      return published;
    };
    /** The webhook baseline's publish → receipt for these events, sorted. */
    const hookLatencies = (published: Map<string, number>): number[] => {
      const hook: number[] = [];
      for (const [id, at] of published) {
        const got = webhookSeen.get(id);
        if (got !== undefined) hook.push(got - at);
      }
      return hook.sort((x, y) => x - y);
    };
    /** The gateway's response headers as a stream got them, those node:http writes itself aside. */
    const headOf = (raw: readonly string[]): string[] => {
      const head: string[] = [];
      for (let i = 0; i + 1 < raw.length; i += 2)
        if (!NODE_OWN_HEADERS.has(raw[i]!.toLowerCase())) head.push(raw[i]!, raw[i + 1]!);
      return head;
    };

    /** Ours: --streams through the gateway, their memory, then the `phase`-th batch of events. */
    const runOurs = async (phase: number) => {
      const gatewayBefore = treeRssKb(gateway.child.pid!);
      const signalsBefore = rssKb(signals.child.pid!);
      const opening = Date.now();
      for (let i = 0; i < streams; i += 50) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(50, streams - i) }, () => openStream(gateway.url, key)),
        );
        clients.push(...batch);
      }
      console.log(`${clients.length} streams open in ${((Date.now() - opening) / 1000).toFixed(1)} s`);
      await new Promise((r) => setTimeout(r, 2000));
      const gatewayKb = treeRssKb(gateway.child.pid!) - gatewayBefore;
      const signalsKb = rssKb(signals.child.pid!) - signalsBefore;
      const published = await publish(phase);
      // Again once the events have flowed for --seconds: the heap grown while the streams opened
      // has had the time to be collected and given back, what stays is what the streams hold.
      const gatewayEndKb = treeRssKb(gateway.child.pid!) - gatewayBefore;
      const signalsEndKb = rssKb(signals.child.pid!) - signalsBefore;
      const head = headOf(clients[0]?.rawHeaders ?? []);
      const got = receipts(published, clients);
      for (const c of clients.splice(0)) c.close();
      return { gatewayKb, signalsKb, gatewayEndKb, signalsEndKb, published, head, ...got };
    };
    // The floors are fed by the service's stream as a gateway process is, with a token for the
    // same audience.
    const feed = () => ({
      url: `${signals.url}${SIGNAL_STREAM_PATH}`,
      token: benchInternalToken('signals', 'api-gateway'),
    });
    const runFloors = async (head: string[], firstPhase: number) => {
      const one = await floorRun(streams, head, 1, feed(), () => publish(firstPhase));
      await new Promise((r) => setTimeout(r, 1000));
      const two = await floorRun(streams, head, GATEWAY_WORKERS, feed(), () => publish(firstPhase + 1));
      return { one, two };
    };

    let ours: Awaited<ReturnType<typeof runOurs>>;
    let floorRuns: Awaited<ReturnType<typeof runFloors>>;
    if (floorFirst) {
      // The floors need the gateway's response headers before ours run: one stream's.
      const probe = await openStream(gateway.url, key);
      probe.close();
      await new Promise((r) => setTimeout(r, 1000));
      floorRuns = await runFloors(headOf(probe.rawHeaders), 0);
      await new Promise((r) => setTimeout(r, 1000));
      ours = await runOurs(2);
    } else {
      ours = await runOurs(0);
      await new Promise((r) => setTimeout(r, 1000));
      floorRuns = await runFloors(ours.head, 1);
    }
    const { gatewayKb, signalsKb, gatewayEndKb, signalsEndKb, published, latencies, missing } = ours;
    const gatewayHead = ours.head;
    const floor = floorRuns.one;
    const floorAsOurs = floorRuns.two;
    const hook = hookLatencies(published);
    const floorHook = hookLatencies(floor.published);
    const floorAsOursHook = hookLatencies(floorAsOurs.published);
    const allHook = [...hook, ...floorHook, ...floorAsOursHook].sort((x, y) => x - y);

    const p = (sorted: number[], q: number) => percentile(sorted, q);
    /** A baseline's sample, said with its size: the p99 of fewer than 100 samples is their maximum. */
    const sample = (sorted: number[], of: number) =>
      `${sorted.length}/${of} delivered${sorted.length <= 100 ? `, so its p99 is their max` : ''}`;
    console.log(
      `\n${streams} streams × ${rate} events/s for ${seconds} s (${published.size} events, ${latencies.length} deliveries, ${missing} missing)`,
    );
    const streamP99 = p(latencies, 0.99);
    const hookP99 = p(hook, 0.99);
    console.log(
      `publish → stream client: p50 ${p(latencies, 0.5)} ms, p99 ${streamP99} ms, max ${latencies.at(-1)} ms`,
    );
    console.log(
      `publish → webhook receiver (baseline, same events): p50 ${p(hook, 0.5)} ms, p99 ${hookP99} ms (${sample(hook, published.size)})`,
    );
    console.log(`p99 stream / webhook baseline: ${(streamP99 / hookP99).toFixed(2)}× (target ≤ 1)`);
    console.log(
      `latency floor: bare node:http fed by the service's stream, the same client, ${total} more events each, ${floorFirst ? 'before' : 'after'} ours (each with the webhook baseline of its own events):`,
    );
    const floors: Array<{ label: string; run: FloorRun; hook: number[] }> = [
      { label: '1 process', run: floor, hook: floorHook },
      { label: `${GATEWAY_WORKERS} processes, as ours`, run: floorAsOurs, hook: floorAsOursHook },
    ];
    for (const { label, run, hook: runHook } of floors)
      console.log(
        `  floor, ${label}: p50 ${p(run.latencies, 0.5)} ms, floor p99 ${p(run.latencies, 0.99)} ms, max ${run.latencies.at(-1)} ms (${run.latencies.length} deliveries, ${run.missing} missing); baseline p50 ${p(runHook, 0.5)} ms, p99 ${p(runHook, 0.99)} ms (${sample(runHook, run.published.size)}); floor p99 / baseline ${(p(run.latencies, 0.99) / p(runHook, 0.99)).toFixed(2)}×`,
      );
    const floorP99 = Math.min(p(floor.latencies, 0.99), p(floorAsOurs.latencies, 0.99));
    console.log(
      `p99 stream / floor p99 (the lower of the two): ${(streamP99 / floorP99).toFixed(2)}×; webhook baseline over all ${allHook.length} deliveries of the three phases: p50 ${p(allHook, 0.5)} ms, p99 ${p(allHook, 0.99)} ms`,
    );
    const oursKb = (gatewayKb + signalsKb) / streams;
    console.log(
      `memory per open stream: gateway ${(gatewayKb / streams).toFixed(1)} KB, signals ${(signalsKb / streams).toFixed(1)} KB, together ${oursKb.toFixed(1)} KB; floor ${floor.kbPerStream.toFixed(1)} KB (bare node:http, ${gatewayHead.length / 2} headers); ours / floor ${(oursKb / floor.kbPerStream).toFixed(2)}× (target ≤ 1.5)`,
    );
    console.log(
      `floor in the gateway's process layout (${GATEWAY_WORKERS} node:http processes, node:cluster): ${floorAsOurs.kbPerStream.toFixed(1)} KB; ours / that floor ${(oursKb / floorAsOurs.kbPerStream).toFixed(2)}×`,
    );
    console.log(
      `memory per open stream at the end of the run: gateway ${(gatewayEndKb / streams).toFixed(1)} KB, signals ${(signalsEndKb / streams).toFixed(1)} KB, together ${((gatewayEndKb + signalsEndKb) / streams).toFixed(1)} KB`,
    );
    await api.close();
    await ingest.close();
  } finally {
    for (const c of clients) c.close();
    for (const p of started.reverse()) await p.stop();
    receiver.close();
    await deleteKeysMatching(redis, `${redisPrefix}*`).catch(() => undefined);
    await dropBrokerPrefix(prefix).catch(() => undefined);
    const conn = await mongoose.createConnection(infra().MONGO_URL).asPromise();
    for (const name of [`${db}_signals`, `${db}_gateway`, `${db}_webhooks`])
      await conn
        .useDb(name)
        .dropDatabase()
        .catch(() => undefined);
    await conn.close(true);
    redis.disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
