import { ROUTES, SIGNAL_TYPES, type SignalType } from '@signal/contracts';
import { benchApiKey } from '../harness';
import { exactnessViolations, uniqueName, type LimitedResponse, type Receiver } from '@signal/test-kit';
import { request } from 'undici';
import type { CreatedSignal } from './load';
import type { ChaosReport } from './report';
import type { ChaosSystem } from './system';

/**
 * What the end checks compare: the events each webhook subscriber should get and got, the signals
 * the public list holds, and a rate limit burst across the gateway replicas.
 */

/** Subscriber i takes every signal event of two types, so each type has ~subscribers/3 subscribers. */
export function subscriberTypes(i: number): SignalType[] {
  return [SIGNAL_TYPES[i % SIGNAL_TYPES.length]!, SIGNAL_TYPES[(i + 1) % SIGNAL_TYPES.length]!];
}

export async function json(url: string, headers: Record<string, string>): Promise<unknown> {
  const res = await request(url, { headers, headersTimeout: 15_000, bodyTimeout: 15_000 });
  return res.body.json();
}

/** Every id the public list holds, paged by cursor through the gateway. */
export async function listAll(
  gatewayUrl: string,
  auth: Record<string, string>,
): Promise<{ ids: string[]; total: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let total: number;
  do {
    const page = (await json(
      `${gatewayUrl}${ROUTES.listSignals.path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      auth,
    )) as { data: Array<{ id: string }>; meta: { total: number; next_cursor: string | null } };
    ids.push(...page.data.map((s) => s.id));
    total = page.meta.total;
    cursor = page.meta.next_cursor;
  } while (cursor);
  return { ids, total };
}

export function deliveredPairs(receivers: Receiver[]): {
  pairs: Set<string>;
  redeliveries: number;
  pairsWithSeveralIds: number;
} {
  const idsByPair = new Map<string, Set<string>>();
  let redeliveries = 0;
  receivers.forEach((r, i) => {
    const seen = new Set<string>();
    for (const req of r.requests) {
      const id = String(req.headers['webhook-id'] ?? '');
      if (seen.has(id)) redeliveries += 1;
      seen.add(id);
      try {
        const body = JSON.parse(req.body) as { event: string; data: { id: string } };
        const pair = `${i}|${body.event}|${body.data.id}`;
        const ids = idsByPair.get(pair) ?? new Set<string>();
        ids.add(id);
        idsByPair.set(pair, ids);
      } catch {
        // not a webhook body: ignored (counted nowhere)
      }
    }
  });
  return {
    pairs: new Set(idsByPair.keys()),
    redeliveries,
    pairsWithSeveralIds: [...idsByPair.values()].filter((ids) => ids.size > 1).length,
  };
}

/** The per-minute limit of the burst after the run, and how many requests it sends. */
export const BURST_LIMIT = 40;
export const BURST_SIZE = 120;

/**
 * A burst of BURST_SIZE requests on a fresh key limited to BURST_LIMIT a minute, all in flight at
 * once and sent straight to the gateway replicas in turn (each on a connection of its own): the
 * limit holds across the processes, exactly.
 */
export async function limitsAcrossGateways(system: ChaosSystem): Promise<ChaosReport['checks']['limits']> {
  const { key } = benchApiKey(
    system.databases.gateway,
    system.redisPrefix,
    `${uniqueName('limits')}@example.com`,
    {
      perMinute: BURST_LIMIT,
      perDay: 1_000_000,
    },
  );
  const gateways = system.services.gateway;
  const byGateway = gateways.map(() => 0);
  const responses = await Promise.all(
    Array.from({ length: BURST_SIZE }, async (_, i): Promise<LimitedResponse> => {
      const g = i % gateways.length;
      const res = await request(`${gateways[g]!.url}${ROUTES.getStats.path}`, {
        headers: { authorization: `Bearer ${key}`, connection: 'close' },
        headersTimeout: 15_000,
        bodyTimeout: 15_000,
      });
      await res.body.dump();
      byGateway[g]! += 1;
      const header = (name: string) => {
        const v = res.headers[name];
        return Array.isArray(v) ? v[0] : v;
      };
      return {
        status: res.statusCode,
        reset: header('x-ratelimit-reset'),
        remaining: header('x-ratelimit-remaining'),
      };
    }),
  );
  const { violations, windows } = exactnessViolations(responses, BURST_LIMIT);
  return {
    limit: BURST_LIMIT,
    sent: BURST_SIZE,
    admitted: responses.filter((r) => r.status === 200).length,
    byGateway,
    windows,
    violations,
  };
}

export function expectedPairs(created: CreatedSignal[], subscribers: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < subscribers; i++) {
    const types = subscriberTypes(i);
    for (const s of created) {
      if (!types.includes(s.type)) continue;
      out.push(`${i}|signal.new|${s.id}`);
      if (s.transition) out.push(`${i}|signal.${s.transition}|${s.id}`);
    }
  }
  return out;
}
