import { createServer, type Server } from 'node:http';
import path from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import { ROUTES, fillPath } from '@signal/contracts';
import { lanesOf } from '@signal/messaging';
import { newId, parseCliArgs, readCommandLine } from '@signal/service-kit';
import { signalSnapshotFixture } from '@signal/test-kit';
import { connect } from 'amqplib';
import mongoose from 'mongoose';
import { Pool } from 'undici';
import {
  benchInternalToken,
  cpuBetween,
  cpuByGroup,
  machineGroups,
  dropBrokerPrefix,
  infra,
  percentile,
  ROOT,
  startService,
  wholeNumberOption,
} from './harness';

/**
 * pnpm bench neighbours [--events 300] [--rate 25] [--hanging 20] [--failing 5] [--busy 25]
 *   [--rounds 2] [--lanes 16] [--before DIR]
 *
 * One account's healthy deliveries beside hostile neighbours, with first attempts in one lane
 * (WEBHOOK_LANES=1: every account shares it) and in lanes (--lanes), and with --before the
 * webhooks service built in another checkout DIR (`git worktree add DIR <commit>`, then `pnpm
 * install --offline && pnpm exec tsc -b services/webhooks` there), in alternation, in one run. Each
 * configuration gets a fresh webhooks API + worker (own database, own queues) and three accounts,
 * each in a lane of its own: a hostile one (--hanging receivers that never answer, --failing that
 * answer 500), a busy one (--busy healthy receivers) and the victim (one healthy receiver). Every
 * subscription takes signal.new; --events events go on the bus at --rate a second. Victim's
 * delay = its receiver's receipt minus the event's publish. The run is void (exit 1) unless the
 * victim and the busy account got every event exactly once in every configuration.
 */
const CLI = {
  name: 'neighbours bench',
  usage:
    'usage: pnpm bench neighbours [--events 300] [--rate 25] [--hanging 20] [--failing 5] [--busy 25] [--rounds 2] [--lanes 16] [--before DIR]',
};
const opts = readCommandLine(CLI, () =>
  parseCliArgs(process.argv.slice(2), {
    events: { type: 'string', default: '300' },
    rate: { type: 'string', default: '25' },
    hanging: { type: 'string', default: '20' },
    failing: { type: 'string', default: '5' },
    busy: { type: 'string', default: '25' },
    rounds: { type: 'string', default: '2' },
    lanes: { type: 'string', default: '16' },
    before: { type: 'string' },
  }),
);
const num = (name: keyof typeof opts): number => wholeNumberOption(CLI, opts, name);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A receiver on loopback: receipts by signal id, and an answer (or none: `hang`). */
async function startReceiver(answer: number | 'hang') {
  const receipts = new Map<string, number[]>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { id: string } };
      const list = receipts.get(body.data.id) ?? [];
      list.push(at);
      receipts.set(body.data.id, list);
      if (answer !== 'hang') res.writeHead(answer).end();
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    receipts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * Account ids for the run: the hostile, busy and victim accounts in lanes of their own (no lane
 * of one is a lane of another), and a second victim whose own lane is the hostile account's.
 */
function accountsInLanes(lanes: number) {
  const taken = new Set<number>();
  const pick = (role: string, rule: (pair: [number, number]) => boolean) => {
    for (let k = 0; ; k++) {
      const id = `acc_nb_${role}_${k}`;
      const pair = lanesOf(id, lanes);
      if (rule(pair)) {
        for (const lane of pair) taken.add(lane);
        return id;
      }
    }
  };
  const apart = (pair: [number, number]) => !pair.some((lane) => taken.has(lane));
  const hostile = pick('hostile', apart);
  const busy = pick('busy', apart);
  const victim = pick('victim', apart);
  const hostileOwn = lanesOf(hostile, lanes)[0];
  const sharing = pick(
    'sharing',
    ([own, second]) => own === hostileOwn && !lanesOf(hostile, lanes).includes(second),
  );
  return { hostile, busy, victim, sharing };
}

interface Outcome {
  label: string;
  victim: number[];
  /** The victim whose own lane is the hostile account's. */
  sharing: number[];
  busy: number[];
  /** Events a healthy receiver got other than exactly once. */
  wrong: number;
  /** CPU seconds by component over the run, and the worker's jobs put back to wait, by reason. */
  cpu: Map<string, number>;
  putBacks: Record<string, number>;
  /** The victim's delay in two parts: publish → fan-out, and fan-out → its receiver. */
  toFanOut: number[];
  fromFanOut: number[];
}

/** The worker's metrics port in this bench (the API is on 4501, the worker's health on 4502). */
const WORKER_METRICS_PORT = 4503;

async function putBacksByReason(): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${WORKER_METRICS_PORT}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^webhook_deferrals_total\{reason="([a-z_]+)"\} (\d+)/gm))
    counts[m[1]!] = Number(m[2]);
  return counts;
}

/** The webhooks service's built entry points, here or in the checkout `root`. */
const entries = (root = ROOT) => ({
  api: path.relative(ROOT, path.join(root, 'services/webhooks/dist/main.js')),
  worker: path.relative(ROOT, path.join(root, 'services/webhooks/dist/worker.js')),
});

async function runOnce(
  label: string,
  lanes: number,
  accounts: ReturnType<typeof accountsInLanes>,
  root?: string,
) {
  const events = num('events');
  const db = `bench_neighbours_${label.replace(/\W/g, '')}_${Date.now()}`;
  const prefix = `${db}.`;
  const env = {
    WEBHOOKS_DB: db,
    AMQP_PREFIX: prefix,
    WEBHOOK_ALLOW_LOOPBACK_URLS: 'true',
    WEBHOOK_LANES: String(lanes),
    // The victim's delivery pages read at the end are the bench's instrument: not paced.
    WEBHOOK_LIST_READ_BURST_MS: '600000',
  };
  const hanging = await startReceiver('hang');
  const failing = await startReceiver(500);
  const healthy = await startReceiver(200);
  const victim = await startReceiver(200);
  const sharing = await startReceiver(200);
  const built = entries(root);
  const api = await startService(built.api, 4501, env);
  const worker = await startService(built.worker, 4502, {
    ...env,
    WORKER_METRICS_PORT: String(WORKER_METRICS_PORT),
  });
  // Every RabbitMQ, FerretDB and PostgreSQL process on the machine counts: run it alone.
  const groupOf = machineGroups(new Map([[worker.child.pid, 'worker']]));
  const pool = new Pool(api.url, { connections: 8 });
  const conn = await connect(infra().AMQP_URL);
  try {
    const subscribe = async (account: string, url: string): Promise<string> => {
      const res = await pool.request({
        method: 'POST',
        path: ROUTES.createWebhook.path,
        headers: {
          authorization: `Bearer ${benchInternalToken('webhooks', account)}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ url, events: ['signal.new'] }),
      });
      const text = await res.body.text();
      if (res.statusCode !== 201) throw new Error(`subscribe: ${res.statusCode} ${text}`);
      return (JSON.parse(text) as { data: { id: string } }).data.id;
    };
    for (let i = 0; i < num('hanging'); i++) await subscribe(accounts.hostile, `${hanging.url}/h${i}`);
    for (let i = 0; i < num('failing'); i++) await subscribe(accounts.hostile, `${failing.url}/f${i}`);
    for (let i = 0; i < num('busy'); i++) await subscribe(accounts.busy, `${healthy.url}/b${i}`);
    const victimWebhook = await subscribe(accounts.victim, `${victim.url}/v`);
    await subscribe(accounts.sharing, `${sharing.url}/s`);

    const channel = await conn.createConfirmChannel();
    const exchange = `${prefix}signal.events`;
    await channel.assertExchange(exchange, 'topic', { durable: true });
    const published = new Map<string, number>();
    const signalOfEvent = new Map<string, string>();
    const cpuBefore = cpuByGroup(groupOf);
    const start = Date.now();
    for (let i = 0; i < events; i++) {
      const due = start + (i * 1000) / num('rate');
      if (due > Date.now()) await sleep(due - Date.now());
      const now = new Date().toISOString();
      const signalId = newId('sig');
      const e = {
        id: newId('evt'),
        name: 'signal.new',
        occurred_at: now,
        signal: signalSnapshotFixture(signalId, now),
      };
      published.set(signalId, Date.now());
      signalOfEvent.set(e.id, signalId);
      channel.publish(exchange, e.name, Buffer.from(JSON.stringify(e)), {
        messageId: e.id,
        persistent: true,
      });
    }
    await channel.waitForConfirms();
    const everyone = () =>
      victim.receipts.size >= events &&
      sharing.receipts.size >= events &&
      healthy.receipts.size >= events &&
      allBusyIn(healthy, num('busy'));
    const deadline = Date.now() + 300_000;
    while (!everyone() && Date.now() < deadline) await sleep(200);
    const cpu = new Map(
      [...cpuBetween(cpuBefore, cpuByGroup(groupOf))].map(([group, us]) => [group, us / 1e6]),
    );
    const putBacks = await putBacksByReason();
    // Where the victim's delay went: publish → fan-out (its delivery's created_at), then fan-out →
    // its receiver (the job queued, taken, claimed and POSTed).
    const toFanOut: number[] = [];
    const fromFanOut: number[] = [];
    for (let page = 1; page <= Math.ceil(events / 100); page++) {
      const res = await pool.request({
        method: 'GET',
        path: `${fillPath(ROUTES.listWebhookDeliveries.path, { webhook_id: victimWebhook })}?limit=100&page=${page}`,
        headers: { authorization: `Bearer ${benchInternalToken('webhooks', accounts.victim)}` },
      });
      const body = (await res.body.json()) as { data: Array<{ event_id: string; created_at: string }> };
      for (const d of body.data) {
        const signalId = signalOfEvent.get(d.event_id);
        const receivedAt = signalId === undefined ? undefined : victim.receipts.get(signalId)?.[0];
        if (signalId === undefined || receivedAt === undefined) continue;
        const createdAt = Date.parse(d.created_at);
        toFanOut.push(createdAt - (published.get(signalId) ?? createdAt));
        fromFanOut.push(receivedAt - createdAt);
      }
    }
    await sleep(2000); // a duplicate would come now
    const delays = (rx: Receiver) =>
      [...rx.receipts]
        .flatMap(([id, at]) => at.map((t) => t - (published.get(id) ?? 0)))
        .sort((a, b) => a - b);
    const wrong =
      [...published.keys()].filter((id) => victim.receipts.get(id)?.length !== 1).length +
      [...published.keys()].filter((id) => sharing.receipts.get(id)?.length !== 1).length +
      [...published.keys()].filter((id) => healthy.receipts.get(id)?.length !== num('busy')).length;
    return {
      label,
      victim: delays(victim),
      sharing: delays(sharing),
      busy: delays(healthy),
      wrong,
      cpu,
      putBacks,
      toFanOut: toFanOut.sort((a, b) => a - b),
      fromFanOut: fromFanOut.sort((a, b) => a - b),
    } satisfies Outcome;
  } finally {
    await pool.close();
    await conn.close().catch(() => undefined);
    await worker.stop();
    await api.stop();
    for (const rx of [hanging, failing, healthy, victim, sharing]) await rx.close();
    const m = await mongoose.createConnection(infra().MONGO_URL, { dbName: db }).asPromise();
    await m.dropDatabase();
    await m.close();
    await dropBrokerPrefix(prefix);
  }
}

/** Whether every event reached each of the busy account's receivers (one receiver, `busy` paths). */
function allBusyIn(rx: Receiver, busy: number): boolean {
  for (const at of rx.receipts.values()) if (at.length < busy) return false;
  return true;
}

const ms = (sorted: number[], p: number) => Math.round(percentile(sorted, p / 100));
const figures = (name: string, d: number[]) =>
  `${name} p50 ${ms(d, 50)} p90 ${ms(d, 90)} max ${ms(d, 100)} ms`;
const summary = (o: Outcome) =>
  [
    `${o.label.padEnd(9)} ${figures('victim', o.victim)}; ${figures("sharing the hostile's lane", o.sharing)}; ${figures('busy', o.busy)}; wrong ${o.wrong}`,
    `          victim: ${figures('to fan-out', o.toFanOut)}; ${figures('then to its receiver', o.fromFanOut)}`,
    `          CPU s ${[...o.cpu].map(([g, sec]) => `${g} ${sec.toFixed(1)}`).join(', ')}; put back ${
      Object.entries(o.putBacks)
        .map(([r, n]) => `${r} ${n}`)
        .join(', ') || 'none'
    }`,
  ].join('\n');

async function main() {
  const lanes = num('lanes');
  const accounts = accountsInLanes(lanes);
  console.log(
    `neighbours bench — ${num('events')} events at ${num('rate')}/s; hostile account ${num('hanging')} hanging + ${num('failing')} failing receivers, busy ${num('busy')} healthy, two victims of 1 (one in the hostile account's own lane); webhooks API, worker, broker, store and receivers share this machine`,
  );
  const outcomes: Outcome[] = [];
  for (let round = 0; round < num('rounds'); round++) {
    // Alternating which goes first, so that the machine's drift favours neither.
    const order: Array<[string, number, string | undefined]> = [
      ['one line', 1, undefined],
      ['lanes', lanes, undefined],
      ...(opts.before !== undefined
        ? [['before', lanes, path.resolve(opts.before)] as [string, number, string]]
        : []),
    ];
    if (round % 2 === 1) order.reverse();
    for (const [label, n, root] of order) {
      const outcome = await runOnce(label, n, accounts, root);
      outcomes.push(outcome);
      console.log(summary(outcome));
    }
  }
  const of = (label: string) => outcomes.filter((o) => o.label === label);
  const p90s = (label: string, who: 'victim' | 'sharing' = 'victim') => of(label).map((o) => ms(o[who], 90));
  const maxes = (label: string) => of(label).map((o) => ms(o.victim, 100));
  const wrong = outcomes.reduce((n, o) => n + o.wrong, 0);
  console.log(
    `neighbours: victim p90 ${p90s('lanes').join('/')} ms in lanes (${p90s('lanes', 'sharing').join('/')} sharing the hostile's) against ${p90s('one line').join('/')} ms in one line${opts.before !== undefined ? ` and ${p90s('before').join('/')} ms before` : ''}; max ${maxes('lanes').join('/')} against ${maxes('one line').join('/')}${opts.before !== undefined ? ` and ${maxes('before').join('/')}` : ''} ms; ${wrong === 0 ? 'every event once' : `${wrong} events lost or repeated: VOID`}`,
  );
  if (wrong > 0) process.exit(1);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
