import fc from 'fast-check';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Agent } from 'undici';
import type { SystemHarness } from '../services/api-gateway/test/system-harness';
import {
  ARTIFACTS,
  BATCH,
  RUNS,
  arbitraries,
  describe_,
  fuzzSuite,
  problems,
  send,
  type FuzzRequest,
  type Seeded,
} from './fuzz-harness';

/**
 * Property-based fuzzing of the whole running system through the gateway:
 * generated requests — odd paths and %-escapes, parameters, headers, methods, bodies up to ~2 MB,
 * deep and mislabelled JSON — go out in batches that are all in flight at once. Every request must
 * get a response (a hang shows as no response within NO_RESPONSE_AFTER_MS), below 500, with the error
 * envelope on every error and no stack or driver text;
 * writes that were refused must have changed nothing in any store.
 *
 * Reproduce a failure with FUZZ_SEED=<seed printed by fast-check>; FUZZ_RUNS sets the number of
 * batches.
 */
describe('fuzzing the whole system through the gateway', () => {
  let sys: SystemHarness;
  let seeded: Seeded;
  let agent: Agent;
  const fuzz = fuzzSuite('fuzz');
  beforeAll(() => {
    ({ sys, seeded, agent } = fuzz.started());
  });
  const { storeState } = fuzz;

  it('when 1,800 generated requests arrive 12 at a time, then each gets a response, below 500, with the envelope on errors and no internals, and refused writes change nothing', async () => {
    const before = await storeState();
    const failed: FuzzRequest[] = [];
    const accepted: FuzzRequest[] = []; // 2xx responses to unsafe methods: the writes that may have changed the store
    let sent = 0;
    const statuses = new Map<number, number>();
    const unsafe = (m: string) => !['GET', 'HEAD', 'OPTIONS'].includes(m);

    const run = await fc.check(
      fc.asyncProperty(
        fc.array(arbitraries(seeded), { minLength: BATCH, maxLength: BATCH }),
        async (batch) => {
          const outcomes = await Promise.all(
            batch.map((r) =>
              send(agent, sys.gw.url, r).then(
                (o) => ({ r, o, err: undefined }),
                (err: Error) => ({ r, o: undefined, err }),
              ),
            ),
          );
          const failures: string[] = [];
          for (const { r, o, err } of outcomes) {
            sent += 1;
            if (!o) {
              failed.push(r);
              failures.push(`${describe_(r)}\n  → no response: ${err?.name} ${err?.message}`);
              continue;
            }
            statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1);
            if (o.status < 300 && unsafe(r.method)) accepted.push(r);
            const found = problems(r, o);
            if (found.length) failed.push(r);
            if (found.length) failures.push(`${describe_(r)}\n  → ${o.status}: ${found.join('; ')}`);
          }
          if (failures.length) {
            // What else was in flight: a response held up by another request shows here.
            const batchLines = outcomes.map(
              ({ r, o, err }) =>
                `  [${o ? `${o.status} in ${Math.round(o.ms)} ms` : err?.name}] ${describe_(r).slice(0, 300)}`,
            );
            throw new Error(`${failures.join('\n')}\nthe batch:\n${batchLines.join('\n')}`);
          }
        },
      ),
      {
        numRuns: RUNS,
        seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined,
        endOnFailure: process.env.FUZZ_SHRINK !== '1',
        examples: [
          [
            [
              {
                method: 'GET',
                path: '/v1/webhooks/%ZZ',
                headers: { authorization: `Bearer ${seeded.keys[0]}` },
                body: { kind: 'none' },
              },
              {
                method: 'GET',
                path: `/v1/webhooks/${seeded.webhookIds[0]}/deliveries?page=92233720368547759`,
                headers: { authorization: `Bearer ${seeded.keys[0]}` },
                body: { kind: 'none' },
              },
              { method: 'OPTIONS', path: '/v1/signals', headers: {}, body: { kind: 'none' } },
              ...Array.from({ length: BATCH - 3 }, (): FuzzRequest => ({
                method: 'POST',
                path: '/v1/webhooks',
                headers: { authorization: `Bearer ${seeded.keys[1]}`, 'content-type': 'application/json' },
                body: { kind: 'big', bytes: 2 * 1024 * 1024, fill: 'json-string' },
              })),
            ],
          ],
        ],
      },
    );
    // The counterexample itself can be megabytes: report the seed and what went wrong instead,
    // and keep the failing requests whole for replaying them one by one.
    if (failed.length) {
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(path.join(ARTIFACTS, 'fuzz-failures.json'), JSON.stringify(failed, null, 2));
    }
    if (run.failed)
      throw new Error(
        `fuzz failed (reproduce with FUZZ_SEED=${run.seed}):\n${run.errorInstance instanceof Error ? run.errorInstance.message : String(run.errorInstance)}`,
      );
    expect(sent).toBe(RUNS * BATCH);

    // Refused writes changed nothing: every difference is explained by an accepted write.
    const after = await storeState();
    expect(after.signals).toEqual(before.signals);
    expect(after.indexed).toEqual(before.indexed);
    const touched = (docs: string[], id: string) => docs.find((d) => d.includes(`"_id":"${id}"`));
    const acceptedPaths = accepted.map((r) => r.path).join('\n');
    const explained = (doc: string) => {
      const id = /"_id":"([^"]+)"/.exec(doc)?.[1] ?? '';
      return acceptedPaths.includes(id);
    };
    // Subscriptions: gone or changed only through an accepted request naming them; new ones only by an accepted POST.
    const created = accepted.filter(
      (r) => r.method === 'POST' && /^\/v1\/webhooks\/?(\?|$)/.test(r.path),
    ).length;
    const changedSubs = before.subscriptions.filter((d) => !after.subscriptions.includes(d) && !explained(d));
    expect(changedSubs).toEqual([]);
    const newSubs = after.subscriptions.filter(
      (d) => !before.subscriptions.some((b) => touched([b], /"_id":"([^"]+)"/.exec(d)?.[1] ?? '')),
    );
    expect(newSubs.length).toBeLessThanOrEqual(created);
    const createdKeys = accepted.filter(
      (r) => r.method === 'POST' && /^\/v1\/(account|dashboard)\/keys/.test(r.path),
    ).length;
    const changedKeys = before.keys.filter((d) => !after.keys.includes(d) && !explained(d));
    expect(changedKeys).toEqual([]);
    expect(after.keys.length - before.keys.length).toBeLessThanOrEqual(createdKeys);
    const signups = accepted.filter(
      (r) => r.method === 'POST' && r.path.startsWith('/v1/dashboard/signup'),
    ).length;
    expect(after.accounts.length - before.accounts.length).toBeLessThanOrEqual(signups);
    expect(before.accounts.every((d) => after.accounts.includes(d))).toBe(true);
    console.log(
      `fuzz: ${sent} requests; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])))}; accepted writes ${accepted.length}`,
    );
  }, 900_000); // a hang guard: 5,000 requests take minutes on a loaded machine
});
