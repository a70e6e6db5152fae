import { hashApiKey } from '@signal/api-gateway/dist/accounts/domain/api-key';
import { rateView } from '@signal/api-gateway/dist/edge/domain/rate-limit';
import { clientIpOf } from '@signal/api-gateway/dist/edge/http/client-ip';
import { KeyPathMetrics } from '@signal/api-gateway/dist/edge/http/key-path-metrics';
import {
  pushRateLimitHeaders,
  rateLimitHeaders,
} from '@signal/api-gateway/dist/edge/http/rate-limit-headers';
import {
  routeLabelOf,
  serviceRouteOf,
  takesApiPath,
} from '@signal/api-gateway/dist/edge/http/service-routes';
import { passedOnHeaders } from '@signal/api-gateway/dist/http/upstream';
import { bearerToken, requestIdOf, securityHeaderList } from '@signal/service-kit';

/**
 * pnpm bench key-path: the gateway key path's own steps that do no I/O, each called a million
 * times in a loop (ns per call, the median of five loops), beside the steps the spec's minimum
 * ((r) in the gateway bench) takes too. The gateway bench measures whole requests on a shared
 * machine, where a run's noise (±15–30 %) hides a step of a microsecond; this measures the steps
 * alone, hot, without noise from other processes, so a change to one of them shows here first.
 * What it cannot show is what a step costs cold, as each request at 1,000 req/s runs.
 */

const URL_READ = '/v1/signals/sig_01HZX3K5J7Q8R9S0T1U2V3W4X5';
const KEY = `sk_live_${'a'.repeat(55)}`;
const HEADERS = { host: '127.0.0.1:4100', authorization: `Bearer ${KEY}`, accept: '*/*' };
const SECURITY = securityHeaderList();
const OWN_NAMES = new Set(['x-request-id', 'cache-control']);
for (let i = 0; i < SECURITY.length; i += 2) OWN_NAMES.add(SECURITY[i]!.toLowerCase());
/** A signals service's response head as undici hands it over (its own security headers included). */
const SERVICE_HEAD: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
for (let i = 0; i < SECURITY.length; i += 2) SERVICE_HEAD[SECURITY[i]!.toLowerCase()] = SECURITY[i + 1]!;
Object.assign(SERVICE_HEAD, {
  'x-request-id': 'req_x',
  'content-length': '812',
  date: new Date().toUTCString(),
});
const now = Date.now();
const RATE = rateView(
  { limit: 1_000_000_000, used: 5, resetAt: now / 1000 + 60 },
  { limit: 1_000_000_000, used: 5, resetAt: now / 1000 + 3600 },
);
const clientIp = clientIpOf(false);
const metrics = new KeyPathMetrics();

/** Steps both (r) and ours take: the key's hash, the rate headers. */
const minimum: Record<string, () => unknown> = {
  'bearer + keyed hash': () => hashApiKey(bearerToken(HEADERS.authorization) ?? '', 'bench-pepper'),
  'rate headers': () => rateLimitHeaders(RATE),
};

/** Steps ours takes beyond (r)'s. */
const ours: Record<string, () => unknown> = {
  'route: takes the API path': () => takesApiPath('GET', URL_READ, HEADERS, 'ss_session'),
  'route: owning service': () => serviceRouteOf(URL_READ),
  'route: metrics label': () => routeLabelOf(URL_READ, '/v1/signals'),
  'request id': () => requestIdOf(undefined),
  'client address': () => clientIp('127.0.0.1', undefined),
  'response head (security, id, rate)': () => {
    const head = SECURITY.slice();
    head.push('X-Request-Id', 'req_1');
    pushRateLimitHeaders(head, RATE);
    return head;
  },
  "service's headers passed on": () => passedOnHeaders(SECURITY, OWN_NAMES, SERVICE_HEAD),
  'duration histogram': () => metrics.observe('GET', '/v1/signals/:signal_id', 200, process.hrtime.bigint()),
  'limiter decision counter': () => metrics.countDecision('allowed'),
};

const CALLS = 1_000_000;
let sink: unknown;

/** ns per call: the median of five loops of `CALLS`, after one loop to warm up. */
function nsPerCall(step: () => unknown): number {
  const loops: number[] = [];
  for (let loop = 0; loop < 6; loop++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) sink = step();
    if (loop > 0) loops.push(Number(process.hrtime.bigint() - started) / CALLS);
  }
  loops.sort((a, b) => a - b);
  return loops[2]!;
}

function report(title: string, steps: Record<string, () => unknown>): number {
  console.log(title);
  let total = 0;
  for (const [name, step] of Object.entries(steps)) {
    const ns = nsPerCall(step);
    total += ns;
    console.log(`  ${name.padEnd(36)} ${ns.toFixed(0).padStart(6)} ns`);
  }
  console.log(`  ${'total'.padEnd(36)} ${total.toFixed(0).padStart(6)} ns`);
  return total;
}

const min = report("steps (r) takes too (the spec's minimum):", minimum);
const beyond = report("steps ours takes beyond (r)'s (no I/O, hot):", ours);
console.log(
  `key path: ours ${((min + beyond) / 1000).toFixed(2)} µs of its own pure steps a request, ${(beyond / 1000).toFixed(2)} µs of it beyond the spec's minimum (hot)`,
);
// Read once, so that no call above is dead code to the compiler.
if (sink === SECURITY) console.log('');
