import { storeIdCommands } from '@signal/service-kit';
import { holdStoreTables, isFerretDB, testDatabase } from '@signal/test-kit';
import mongoose, { type Connection, type mongo } from 'mongoose';
import { ensureIndexes, webhookCollections, type WebhookCollections } from '../src/data/webhook.models';
import type { DeliveryPageStart } from '../src/domain/ports';
import { deliveryIdBound, deliveryIdFor, withStates } from '../src/domain/delivery-state';
import type { DeliveryDocument, DeliveryLogEntry, DeliveryStatus } from '../src/domain/records';
import { WebhookRepository } from '../src/data/webhook.repository';
import { IdempotencyRepository } from '../src/data/idempotency.repository';
import { ReadDebtRepository } from '../src/data/read-debt.repository';
import { AccountReadSlots } from '../src/domain/concurrency';
import { listDeliveries } from '../src/domain/read-deliveries.use-cases';
import type { SubscriptionDeps } from '../src/domain/subscription-rules';

/**
 * How the webhooks store is read when a client pages through deliveries: by equalities the
 * MongoDB-wire server can serve from an index. FerretDB does not push `$in` down: a page of the
 * deliveries log read with `$in` would fetch and filter every account's log.
 */
const db = testDatabase('wh_store_reads');
let conn: Connection;
let c: WebhookCollections;
let ferret: boolean;
const commands: Array<{ name: string; body: string }> = [];

beforeAll(async () => {
  conn = await mongoose
    .createConnection(db.url, { dbName: db.dbName, monitorCommands: true, serverSelectionTimeoutMS: 5000 })
    .asPromise();
  conn
    .getClient()
    .on('commandStarted', (e: mongo.CommandStartedEvent) =>
      commands.push({ name: e.commandName, body: JSON.stringify(e.command) }),
    );
  c = webhookCollections(conn);
  // Both read paths run here: the driver's (MongoDB's) reads by the webhook_id indexes too.
  await ensureIndexes(c, { pagedByStore: false, logByIdPrefix: false });
  ferret = await isFerretDB(conn);
});
afterAll(async () => {
  await conn.dropDatabase();
  await conn.close();
});

const STATUSES: DeliveryStatus[] = ['pending', 'succeeded', 'failed'];

const delivery = (id: string, webhookId: string): DeliveryDocument => ({
  _id: id,
  account_id: 'acc_store',
  webhook_id: webhookId,
  event_id: `evt_${id}`,
  event: 'signal.new',
  payload: '{}',
  status: 'pending',
  created_at: new Date(),
});

const attempt = (deliveryId: string, webhookId: string, k: number, status: number): DeliveryLogEntry => ({
  _id: `${deliveryId}:${2 * k}`,
  delivery_id: deliveryId,
  webhook_id: webhookId,
  seq: 2 * k,
  kind: 'attempt',
  attempt: k,
  status: status < 300 ? 'succeeded' : 'pending',
  next_attempt_at: null,
  at: new Date(),
  started_at: new Date(),
  duration_ms: 3,
  status_code: status,
  error: null,
});

describe('webhooks store reads', () => {
  it('when a page of deliveries is read, then each delivery’s log comes from one equality read, never $in, and pushed down on FerretDB', async () => {
    const repository = new WebhookRepository(c);
    const ids = ['dlv_a', 'dlv_b', 'dlv_c'];
    await c.deliveries.insertMany([...ids.map((id) => delivery(id, 'wh_1')), delivery('dlv_other', 'wh_2')]);
    await c.deliveryLog.insertMany([
      attempt('dlv_a', 'wh_1', 1, 500),
      attempt('dlv_a', 'wh_1', 2, 200),
      attempt('dlv_b', 'wh_1', 1, 200),
      attempt('dlv_other', 'wh_2', 1, 200),
    ]);

    commands.length = 0;
    const page = await repository.pageDeliveries('wh_1', undefined, { skip: 0 }, 10);
    const log = await repository.logOf(page.rows.map((d) => d._id));

    expect(page.rows.map((d) => d._id).sort()).toEqual(ids);
    expect(log.map((e) => e._id).sort()).toEqual(['dlv_a:2', 'dlv_a:4', 'dlv_b:2']);
    const finds = commands.filter((cmd) => cmd.name === 'find');
    expect(finds.length).toBeGreaterThanOrEqual(4); // the page, then one read per delivery
    for (const find of finds) expect(find.body).not.toContain('$in');
    if (ferret) {
      const plan = await c.deliveryLog.find({ delivery_id: 'dlv_a' }).explain();
      expect(plan['filterPushdown']).toBe(true);
    }
  });

  it('when the store pages ids itself, then every page, total and keyset walk is the sorted find’s, and no read covers the history', async () => {
    const pageIds = await storeIdCommands(conn);
    // The test command's store is the embedded FerretDB over PostgreSQL, whose wrapper answers
    // (infra/ferretdb/pages.go); MongoDB answers "no such command" and pages with its index.
    expect(pageIds !== undefined).toBe(ferret);
    if (!pageIds) return;
    const byStore = new WebhookRepository(c, pageIds);
    const byFind = new WebhookRepository(c);
    const start = Date.now();
    // Three deliveries a millisecond, so the id breaks ties; two events; another subscription.
    await c.deliveries.insertMany(
      Array.from({ length: 45 }, (_, i) => ({
        ...delivery(`dlv_page_${String(i).padStart(2, '0')}`, i % 9 === 4 ? 'wh_page_other' : 'wh_page'),
        event: i % 2 ? 'signal.new' : 'signal.winner',
        created_at: new Date(start + Math.floor(i / 3)),
      })),
    );
    const both = async (event: string | undefined, from: DeliveryPageStart, limit: number) => {
      const [store, find] = await Promise.all([
        byStore.pageDeliveries('wh_page', event, from, limit),
        byFind.pageDeliveries('wh_page', event, from, limit),
      ]);
      const ids = store.rows.map((d) => d._id);
      expect({ ids, total: store.total }).toEqual({ ids: find.rows.map((d) => d._id), total: find.total });
      return { rows: store.rows, ids, total: store.total };
    };

    for (const event of [undefined, 'signal.new']) {
      for (const skip of [0, 7, 34, 60]) await both(event, { skip }, 7);
      // A walk by keyset, forwards to the end, then back from the last page.
      const walked: string[] = [];
      let page = await both(event, { skip: 0 }, 7);
      while (page.rows.length > 0) {
        walked.push(...page.ids);
        const last = page.rows[page.rows.length - 1];
        if (!last) break;
        page = await both(event, { after: { at: last.created_at, id: last._id } }, 7);
      }
      expect(walked.length).toBe(page.total);
      expect(new Set(walked).size).toBe(walked.length);
      const oldest = walked.length - 1;
      const mark = await c.deliveries.findOne({ _id: walked[oldest] });
      if (!mark) throw new Error('the oldest delivery is gone');
      const back = await both(event, { before: { at: mark.created_at, id: mark._id } }, 7);
      expect(back.ids).toEqual(walked.slice(oldest - 7, oldest));
    }
    expect((await both(undefined, { skip: 0 }, 50)).total).toBe(40);

    commands.length = 0;
    await byStore.pageDeliveries('wh_page', undefined, { skip: 20 }, 10);
    const reads = commands.filter((cmd) => cmd.name !== 'pageIds');
    expect(commands.filter((cmd) => cmd.name === 'pageIds')).toHaveLength(1);
    expect(reads.length).toBe(10); // the page's deliveries, each by id
    for (const read of reads) {
      expect(read.name).toBe('find');
      expect(read.body).not.toContain('"webhook_id"');
    }
  });

  it('when the store pages by status, then every page, total and keyset walk is the fold of every log’s', async () => {
    const pageIds = await storeIdCommands(conn);
    expect(pageIds?.pageByLatest !== undefined).toBe(ferret);
    const pageByStatus = new WebhookRepository(c, pageIds).pageDeliveriesByStatus;
    if (!pageByStatus) return;
    const byFind = new WebhookRepository(c);
    const wh = 'wh_status';
    const failed = (id: string, k: number): DeliveryLogEntry => ({
      ...attempt(id, wh, k, 500),
      status: 'failed',
    });
    const resent = (id: string, k: number): DeliveryLogEntry => ({
      ...attempt(id, wh, k, 200),
      _id: `${id}:${2 * k - 1}`,
      seq: 2 * k - 1,
      kind: 'requeued',
      status: 'pending',
      started_at: null,
      status_code: null,
    });
    // Each delivery's story, by its log; the status is its last entry's by seq (numerically:
    // seq 10 comes after seq 8), or the stored one with no entry.
    const stories: Array<(id: string) => DeliveryLogEntry[]> = [
      () => [],
      (id) => [attempt(id, wh, 1, 200)],
      (id) => [attempt(id, wh, 1, 500)],
      (id) => [...[1, 2, 3, 4].map((k) => attempt(id, wh, k, 500)), attempt(id, wh, 5, 200)],
      (id) => [attempt(id, wh, 1, 200), resent(id, 2)],
      (id) => [attempt(id, wh, 1, 500), attempt(id, wh, 2, 500), failed(id, 3)],
      (id) => [failed(id, 1), resent(id, 2), attempt(id, wh, 2, 200)],
    ];
    const start = Date.now();
    const docs: DeliveryDocument[] = Array.from({ length: 50 }, (_, i) => ({
      ...delivery(`dlv_status_${String(i).padStart(2, '0')}`, i % 10 === 9 ? 'wh_status_other' : wh),
      event: i % 2 ? 'signal.new' : 'signal.winner',
      // Kept failed with no attempt (its subscription was off): the stored status stands.
      status: i % 8 === 7 ? 'failed' : 'pending',
      created_at: new Date(start + Math.floor(i / 3)),
    }));
    await c.deliveries.insertMany(docs);
    await c.deliveryLog.insertMany(
      docs.flatMap((d, i) => (d.status === 'failed' ? [] : (stories[i % stories.length]?.(d._id) ?? []))),
    );
    const folded = async (event: string | undefined, status: DeliveryStatus) =>
      withStates(await byFind.allDeliveries(wh, event), await byFind.logOfSubscription(wh))
        .filter((r) => r.state.status === status)
        .map((r) => r.doc._id);

    for (const event of [undefined, 'signal.new'])
      for (const status of STATUSES) {
        const expected = await folded(event, status);
        const examined = await c.deliveries.countDocuments({ webhook_id: wh, ...(event ? { event } : {}) });
        expect(expected.length).toBeGreaterThan(2);
        for (const skip of [0, 3, 40]) {
          const page = await pageByStatus(wh, event, status, { skip }, 4);
          expect({ ids: page.rows.map((d) => d._id), total: page.total, examined: page.examined }).toEqual({
            ids: expected.slice(skip, skip + 4),
            total: expected.length,
            examined,
          });
        }
        // By keyset forwards to the end, then back from the oldest.
        const walked: string[] = [];
        let page = await pageByStatus(wh, event, status, { skip: 0 }, 4);
        for (let last = page.rows.at(-1); last; last = page.rows.at(-1)) {
          walked.push(...page.rows.map((d) => d._id));
          page = await pageByStatus(wh, event, status, { after: { at: last.created_at, id: last._id } }, 4);
        }
        expect(walked).toEqual(expected);
        const oldest = docs.find((d) => d._id === expected.at(-1));
        if (!oldest) throw new Error('no oldest delivery');
        const back = await pageByStatus(
          wh,
          event,
          status,
          { before: { at: oldest.created_at, id: oldest._id } },
          2,
        );
        expect(back.rows.map((d) => d._id)).toEqual(expected.slice(-3, -1));
      }
  });

  it('when the store does not page deliveries by itself, then the fields a client pages by have single-field indexes (FerretDB serves equality only from those)', async () => {
    const names = async (collection: mongo.Collection<never>) =>
      (await collection.listIndexes().toArray()).map((index: { name?: string }) => index.name);
    expect(await names(conn.collection('delivery_log'))).toEqual(
      expect.arrayContaining(['delivery_id_1', 'webhook_id_1']),
    );
    expect(await names(conn.collection('deliveries'))).toEqual(expect.arrayContaining(['webhook_id_1']));
  });

  it('when the store pages deliveries and lists log entries by id itself, then no webhook_id or delivery_id single-field index is written per attempt', async () => {
    const lean = await mongoose
      .createConnection(db.url, { dbName: `${db.dbName}_lean`, serverSelectionTimeoutMS: 5000 })
      .asPromise();
    try {
      // The log gets no index now, so nothing else would create it before its first entry.
      await lean.createCollection('delivery_log');
      await ensureIndexes(webhookCollections(lean), { pagedByStore: true, logByIdPrefix: true });
      const names = async (collection: string) =>
        (await lean.collection(collection).listIndexes().toArray()).map(
          (index: { name?: string }) => index.name,
        );
      expect((await names('deliveries')).sort()).toEqual(['_id_', 'webhook_id_1_created_at_-1']);
      expect(await names('delivery_log')).toEqual(['_id_']);
    } finally {
      await lean.dropDatabase();
      await lean.close();
    }
  });

  it('when the log has no delivery_id index, then a delivery’s entries and a page by status are found by entry ids, and only the delivery’s own', async () => {
    const storeIds = await storeIdCommands(conn);
    if (!ferret) {
      // MongoDB has no wrapper: the service keeps the delivery_id index there.
      expect(storeIds).toBeUndefined();
      return;
    }
    expect(storeIds?.idsByPrefix).toBeDefined();
    const lean = await mongoose
      .createConnection(db.url, {
        dbName: `${db.dbName}_by_id`,
        monitorCommands: true,
        serverSelectionTimeoutMS: 5000,
      })
      .asPromise();
    const finds: string[] = [];
    lean.getClient().on('commandStarted', (e: mongo.CommandStartedEvent) => {
      if (e.commandName === 'find') finds.push(JSON.stringify(e.command.filter));
    });
    try {
      const l = webhookCollections(lean);
      await ensureIndexes(l, { pagedByStore: true, logByIdPrefix: true });
      const repository = new WebhookRepository(l, await storeIdCommands(lean));
      // `dlv_P1` sorts below `dlv_P:` and `dlv_PQ` above `dlv_P;`: neither's entries are dlv_P's.
      const ids = ['dlv_P', 'dlv_P1', 'dlv_PQ', 'dlv_R', 'dlv_S'];
      await l.deliveries.insertMany(ids.map((id) => delivery(id, 'wh_by_id')));
      await l.deliveryLog.insertMany([
        attempt('dlv_P', 'wh_by_id', 1, 500),
        attempt('dlv_P', 'wh_by_id', 2, 200),
        attempt('dlv_P1', 'wh_by_id', 1, 200),
        attempt('dlv_PQ', 'wh_by_id', 1, 200),
        attempt('dlv_R', 'wh_by_id', 1, 500),
      ]);

      const log = await repository.logOf(['dlv_P', 'dlv_R', 'dlv_S']);
      expect(log.map((e) => e._id).sort()).toEqual(['dlv_P:2', 'dlv_P:4', 'dlv_R:2']);
      const summaries = await repository.logSummariesOf(['dlv_P']);
      expect(summaries.map((e) => [e._id, e.status])).toEqual(
        expect.arrayContaining([
          ['dlv_P:2', 'pending'],
          ['dlv_P:4', 'succeeded'],
        ]),
      );
      expect(finds.some((f) => f.includes('delivery_id'))).toBe(false);

      const page = (status: DeliveryStatus) =>
        repository.pageDeliveriesByStatus?.('wh_by_id', undefined, status, { skip: 0 }, 10);
      expect((await page('succeeded'))?.rows.map((d) => d._id).sort()).toEqual(['dlv_P', 'dlv_P1', 'dlv_PQ']);
      // dlv_R's last attempt failed and waits; dlv_S has no entry and keeps its stored status.
      expect((await page('pending'))?.rows.map((d) => d._id).sort()).toEqual(['dlv_R', 'dlv_S']);
      expect(await repository.unattempted(['dlv_P', 'dlv_R', 'dlv_S'])).toEqual(new Set(['dlv_S']));
    } finally {
      await lean.dropDatabase();
      await lean.close();
    }
  });

  /** What the subscriptions API's use cases run on, over `repository`. */
  const depsOf = (repository: WebhookRepository): SubscriptionDeps => ({
    repository,
    idempotency: new IdempotencyRepository(c.idempotency),
    schedule: async () => undefined,
    testLaneOf: () => 0,
    guard: { allowLoopback: true },
    secretOverlapMs: 60_000,
    maxPerAccount: 25,
    recoverPerMinute: 10,
    listReads: new AccountReadSlots(2, 250, 1_000_000, new ReadDebtRepository(c.listReadDebts)),
  });
  const subscription = (id: string, now: number) =>
    c.subscriptions.insertOne({
      _id: id,
      account_id: 'acc_store',
      url: 'https://example.com/hook',
      description: null,
      events: ['signal.new'],
      types: null,
      status: 'enabled',
      disabled_reason: null,
      secrets: [{ secret: 'whsec_x', created_at: new Date(now), expires_at: null }],
      created_at: new Date(now),
      updated_at: new Date(now),
    });

  it('when failed deliveries are listed, then only the open ones are read, never the subscription’s history', async () => {
    const deps = depsOf(new WebhookRepository(c, await storeIdCommands(conn)));
    const now = Date.now();
    await subscription('wh_open', now);
    const idOf = (i: number) => `dlv_01KAB3P000000000000000000${i}`;
    const at = (i: number) => ({
      ...delivery(idOf(i), 'wh_open'),
      created_at: new Date(now - i * 1000),
    });
    await c.deliveries.insertMany([0, 1, 2, 3, 4, 5].map(at));
    const failed = (id: string): DeliveryLogEntry => ({
      ...attempt(id, 'wh_open', 4, 500),
      status: 'failed',
    });
    // 0 and 1 succeeded, 2 waits for a retry, 3 and 5 exhausted their retries; 4 never attempted.
    await c.deliveryLog.insertMany([
      attempt(idOf(0), 'wh_open', 1, 200),
      attempt(idOf(1), 'wh_open', 1, 200),
      attempt(idOf(2), 'wh_open', 1, 500),
      failed(idOf(3)),
      failed(idOf(5)),
    ]);
    await c.openDeliveries.insertMany(
      [idOf(2), idOf(3), idOf(5)].map((id) => ({
        _id: id,
        webhook_id: 'wh_open',
        account_id: 'acc_store',
        at: new Date(now),
      })),
    );
    commands.length = 0;

    const page = await listDeliveries(deps, 'acc_store', 'wh_open', { status: 'failed', limit: 1 });
    expect(page.ok).toBe(true);
    if (!page.ok) return;
    expect(page.value.data.map((d) => d.id)).toEqual([idOf(3)]);
    expect(page.value.meta).toMatchObject({ total: 2, page: 1, total_pages: 2 });
    const next = await listDeliveries(deps, 'acc_store', 'wh_open', {
      status: 'failed',
      limit: 1,
      cursor: page.value.meta.next_cursor ?? undefined,
    });
    expect(next.ok && next.value.data.map((d) => d.id)).toEqual([idOf(5)]);
    expect(next.ok && next.value.meta.next_cursor).toBeNull();

    const finds = commands.filter((cmd) => cmd.name === 'find');
    const bySubscription = finds.filter(
      (f) => /"(deliveries|delivery_log)"/.test(f.body) && f.body.includes('"webhook_id":"wh_open"'),
    );
    expect(bySubscription).toEqual([]);
    for (const find of finds) expect(find.body).not.toContain('$in');
    expect(commands.filter((cmd) => cmd.name === 'pageIdsByLatest')).toEqual([]);
  });

  it('when more deliveries are open than are worth folding, then the store pages the failed ones (and the others), as the fold lists them', async () => {
    const storeIds = await storeIdCommands(conn);
    if (!storeIds?.pageByLatest) return;
    const byStore = depsOf(new WebhookRepository(c, storeIds));
    const byFold = depsOf(new WebhookRepository(c));
    const now = Date.now();
    await subscription('wh_many_open', now);
    const idOf = (i: number) => `dlv_01KAB3Q0000000000000000${String(i).padStart(3, '0')}`;
    const docs = Array.from({ length: 160 }, (_, i) => ({
      ...delivery(idOf(i), 'wh_many_open'),
      created_at: new Date(now - i * 1000),
    }));
    await c.deliveries.insertMany(docs);
    // Every fourth succeeded; of the rest, every fifth waits for a retry, the others failed.
    const stateOf = (i: number) => (i % 4 === 0 ? 200 : i % 5 === 0 ? 500 : 0);
    await c.deliveryLog.insertMany(
      docs.map((d, i) =>
        stateOf(i) === 0
          ? { ...attempt(d._id, 'wh_many_open', 4, 500), status: 'failed' }
          : attempt(d._id, 'wh_many_open', 1, stateOf(i)),
      ),
    );
    await c.openDeliveries.insertMany(
      docs
        .filter((_, i) => stateOf(i) !== 200)
        .map((d) => ({ _id: d._id, webhook_id: 'wh_many_open', account_id: 'acc_store', at: new Date(now) })),
    );
    const pages = async (deps: SubscriptionDeps, status: DeliveryStatus) => {
      const seen: Array<{ ids: string[]; total: number }> = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await listDeliveries(deps, 'acc_store', 'wh_many_open', {
          status,
          limit: 40,
          cursor,
        });
        if (!page.ok) throw new Error(`${page.code}: ${page.message ?? ''}`);
        seen.push({ ids: page.value.data.map((d) => d.id), total: page.value.meta.total });
        if (!page.value.meta.next_cursor) return seen;
        cursor = page.value.meta.next_cursor;
      }
    };
    // Where the store cannot page by status (MongoDB, an older wrapper), the use case folds: both
    // list the same pages.
    const totals: Record<string, number> = {};
    for (const status of STATUSES) {
      commands.length = 0;
      const stored = await pages(byStore, status);
      expect(commands.filter((cmd) => cmd.name === 'pageIdsByLatest').length).toBe(stored.length);
      expect(stored).toEqual(await pages(byFold, status));
      expect(stored.flatMap((p) => p.ids)).toHaveLength(stored[0]?.total ?? -1);
      totals[status] = stored[0]?.total ?? -1;
    }
    expect(totals).toEqual({ failed: 96, pending: 24, succeeded: 40 });
  });

  it('when never-attempted deliveries and subscriptions are looked up by several ids, then the results are whole and no read uses $in', async () => {
    const repository = new WebhookRepository(c);
    await c.deliveries.insertMany([delivery('dlv_fresh', 'wh_3'), delivery('dlv_tried', 'wh_3')]);
    await c.deliveryLog.insertOne(attempt('dlv_tried', 'wh_3', 1, 500));
    commands.length = 0;

    const fresh = await repository.unattempted(['dlv_fresh', 'dlv_tried', 'dlv_missing']);
    const subscriptions = await repository.findSubscriptionsByIds(['wh_none_1', 'wh_none_2']);

    expect([...fresh]).toEqual(['dlv_fresh']);
    expect(subscriptions).toEqual([]);
    for (const find of commands.filter((cmd) => cmd.name === 'find')) expect(find.body).not.toContain('$in');
  });
  it('when a list’s reads outlast their time limit, then either path stops them with MaxTimeMSExpired, and reads again once the store answers', async () => {
    const pageIds = await storeIdCommands(conn);
    await c.deliveries.insertMany(['dlv_max_1', 'dlv_max_2'].map((id) => delivery(id, 'wh_max')));
    const options = { listReadMaxMs: 200 };
    const byFind = new WebhookRepository(c, undefined, options);
    const byStore = pageIds && new WebhookRepository(c, pageIds, options);
    const reads = (r: WebhookRepository) => [
      () => r.pageDeliveries('wh_max', undefined, { skip: 0 }, 5),
      () => r.pageDeliveries('wh_max', undefined, { after: { at: new Date(), id: 'dlv_max_9' } }, 5),
      () => r.pageDeliveriesByStatus?.('wh_max', undefined, 'pending', { skip: 0 }, 5),
      () => r.allDeliveries('wh_max', undefined),
      () => r.logOfSubscription('wh_max'),
    ];
    const held = await holdStoreTables(db.dbName, [
      c.deliveries.collectionName,
      c.deliveryLog.collectionName,
    ]);
    if (!held) return;
    try {
      for (const read of [...reads(byFind), ...(byStore ? reads(byStore) : [])]) {
        const stopped = read();
        // The fold path's repository has no status page (undefined): nothing to stop.
        if (stopped) await expect(stopped).rejects.toMatchObject({ code: 50 });
      }
    } finally {
      await held.release();
    }
    expect((await byFind.pageDeliveries('wh_max', undefined, { skip: 0 }, 5)).total).toBe(2);
    if (byStore) expect((await byStore.pageDeliveries('wh_max', undefined, { skip: 0 }, 5)).total).toBe(2);
  });
  it('when deliveries pass their retention, then either path removes them with their log, open marks and claims, and nothing younger or of another kind', async () => {
    const pageIds = await storeIdCommands(conn);
    const cutoff = Date.parse('2000-01-01T00:00:00Z'); // before every other test's ids
    const bound = deliveryIdBound(cutoff);
    const ids = async () =>
      Promise.all(
        [c.openDeliveries, c.deliveries, c.deliveryLog, c.attemptClaims].map(async (coll) =>
          (await coll.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id).sort(),
        ),
      );
    // Batches of 64, so that the 300 old deliveries go in several on either path.
    const paths = [{ repository: new WebhookRepository(c, undefined, { removeBatch: 64 }), byStore: false }];
    if (pageIds)
      paths.push({ repository: new WebhookRepository(c, pageIds, { removeBatch: 64 }), byStore: true });
    for (const { repository, byStore } of paths) {
      const before = await ids();
      // Events up to a millisecond before the cutoff (the wrapper's batches are its own test's).
      const old = Array.from({ length: 300 }, (_, i) =>
        deliveryIdFor('wh_ret', `evt_old_${i}`, cutoff - 1 - i),
      );
      const kept = [
        deliveryIdFor('wh_ret', 'evt_at', cutoff),
        deliveryIdFor('wh_ret', 'evt_new', cutoff + 1000),
      ];
      await c.deliveries.insertMany([...old, ...kept].map((id) => delivery(id, 'wh_ret')));
      const marked = [old[0]!, old[299]!, ...kept];
      await c.deliveryLog.insertMany(marked.map((id) => attempt(id, 'wh_ret', 1, 500)));
      await c.openDeliveries.insertMany(
        marked.map((id) => ({ _id: id, webhook_id: 'wh_ret', account_id: 'acc_store', at: new Date() })),
      );
      await c.attemptClaims.insertMany(
        marked.map((id) => ({ _id: `${id}:2`, job_id: 'job_1', at: new Date() })),
      );

      // A worker stopping (its signal aborted) removes nothing more.
      const seeded = await ids();
      expect(await repository.removeBefore(bound, AbortSignal.abort())).toBe(0);
      expect(await ids()).toEqual(seeded);
      commands.length = 0;
      expect(await repository.removeBefore(bound)).toBe(300);
      // On the wrapper, the range goes by its own command (FerretDB reads every document for a
      // range delete); on MongoDB by one range delete per collection.
      const names = new Set(commands.map((cmd) => cmd.name));
      expect(names.has(byStore ? 'removeIdRange' : 'delete')).toBe(true);
      if (byStore) expect(names.has('delete')).toBe(false);
      // The deliveries went in five batches (4 × 64 + 44), the three marked ones of each other
      // collection in one.
      const batches = commands.filter((cmd) => cmd.name === (byStore ? 'removeIdRange' : 'delete'));
      expect(batches.filter((cmd) => cmd.body.includes('"deliveries"'))).toHaveLength(5);
      expect(batches).toHaveLength(8);

      const after = await ids();
      const keptIds = [kept, kept.map((id) => `${id}:2`)];
      const expected = [keptIds[0]!, keptIds[0]!, keptIds[1]!, keptIds[1]!];
      after.forEach((now, k) => expect(now).toEqual([...before[k]!, ...expected[k]!].sort()));
      // A second sweep finds nothing; then the kept ones go, so the next path starts as this one did.
      expect(await repository.removeBefore(bound)).toBe(0);
      await repository.removeBefore(deliveryIdBound(cutoff + 2000));
      expect(await ids()).toEqual(before);
    }
  });
});
