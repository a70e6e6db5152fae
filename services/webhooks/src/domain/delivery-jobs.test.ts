import { deferralDelayMs, parseRetryAfter, retryDelayMs } from './delivery-jobs';
import { DeliverySlots, type Place, type SlotLimits } from './concurrency';

describe('retry spacing', () => {
  const delays = [10_000, 120_000, 900_000];

  it('when attempt n fails, then retry n waits its delay ±20 %, and after the last there is none', () => {
    expect(retryDelayMs(delays, 1, undefined, 3_600_000, () => 0)).toBe(8000);
    expect(retryDelayMs(delays, 1, undefined, 3_600_000, () => 1)).toBe(12_000);
    expect(retryDelayMs(delays, 2, undefined, 3_600_000, () => 0.5)).toBe(120_000);
    expect(retryDelayMs(delays, 4, undefined, 3_600_000)).toBeUndefined();
  });

  it('when the receiver sends Retry-After, then it wins when longer, within the cap', () => {
    expect(retryDelayMs(delays, 1, 60_000, 3_600_000, () => 0.5)).toBe(60_000);
    expect(retryDelayMs(delays, 1, 1000, 3_600_000, () => 0.5)).toBe(10_000);
    expect(retryDelayMs(delays, 1, 10 * 3_600_000, 3_600_000, () => 0.5)).toBe(3_600_000);
  });

  it('when Retry-After is seconds or an HTTP date, then it becomes milliseconds from now', () => {
    expect(parseRetryAfter('30')).toBe(30_000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});

describe('waits for a place', () => {
  it('when a job is put back again and again, then each wait doubles from 1 s up to 16 s', () => {
    const middle = () => 0.5;
    expect([0, 1, 2, 3, 4, 5, 50].map((n) => deferralDelayMs(n, middle))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 16_000, 16_000,
    ]);
  });

  it('when jobs are put back together, then their waits spread ±20 %', () => {
    expect(deferralDelayMs(0, () => 0)).toBe(800);
    expect(deferralDelayMs(0, () => 1)).toBe(1200);
    expect(deferralDelayMs(9, () => 0)).toBe(12_800);
  });
});

const limits = (over: Partial<SlotLimits> = {}): SlotLimits => ({
  capacity: 1000,
  perAccount: 400,
  perSubscription: 1000,
  maxWaitMs: 60_000,
  // No budget to speak of: every job over its share is put back at once.
  putBacksPerSecond: 1_000_000,
  laneCapacity: 1000,
  parkMaxMs: 60_000,
  ...over,
});

/** Takes places until refused; the ones held, and the waits still unanswered. */
async function fill(slots: DeliverySlots, account: string, subscription: (i: number) => string) {
  let held = 0;
  const waiting: Array<Promise<Place>> = [];
  for (let i = 0; ; i++) {
    const got = slots.acquire(account, subscription(i));
    if (typeof got === 'string') return { held, waiting };
    if (got === true) held++;
    else waiting.push(got);
  }
}

describe('per-subscription limit', () => {
  it('when a subscription has its limit in flight, then more are refused until one is released; others are unaffected', () => {
    const slots = new DeliverySlots(limits({ perSubscription: 2 }));
    expect(slots.acquire('acc', 'a')).toBe(true);
    expect(slots.acquire('acc', 'a')).toBe(true);
    expect(slots.acquire('acc', 'a')).toBe('subscription_full');
    expect(slots.acquire('acc', 'b')).toBe(true);
    slots.release('acc', 'a');
    expect(slots.acquire('acc', 'a')).toBe(true);
  });

  it("when a subscription's setting is higher than a quarter of its account's places, then the quarter bounds it", () => {
    const slots = new DeliverySlots(limits({ perAccount: 40 }));
    expect(slots.subscriptionLimit('acc')).toBe(10);
    expect(slots.subscriptionLimit('acc')).toBeLessThan(40 / 2);
  });
});

describe('per-account shares', () => {
  it('when one account is busy alone, then it may hold half the capacity: its POSTs in flight and the rest waiting', async () => {
    const alone = new DeliverySlots(limits({ capacity: 10 }));
    expect((await fill(alone, 'slow', (i) => `wh_${i}`)).held).toBe(5);
    const capped = new DeliverySlots(limits({ capacity: 20, perAccount: 3, maxWaitMs: 1 }));
    const taken = await fill(capped, 'slow', (i) => `wh_${i}`);
    expect({ held: taken.held, waiting: taken.waiting.length }).toEqual({ held: 3, waiting: 7 });
    // No POST finished: each waiting job is sent outside once its wait is over.
    expect(new Set(await Promise.all(taken.waiting))).toEqual(new Set(['line_timeout']));
  });

  it('when many accounts have one attempt each, then a bursting account uses the idle capacity but leaves a share free for a newcomer', async () => {
    const slots = new DeliverySlots(limits({ capacity: 12 }));
    for (const a of ['a1', 'a2', 'a3', 'a4', 'a5']) expect(slots.acquire(a, `wh_${a}`)).toBe(true);
    // 5 + 6 = 11 held: the 12th place stays free (the fair share of 12 among 7 is 1).
    expect((await fill(slots, 'burst', (i) => `wh_burst_${i}`)).held).toBe(6);
    expect(slots.acquire('newcomer', 'wh_new')).toBe(true);
  });

  it('when a slow account holds its share, then another account still gets attempts, and a third too', async () => {
    const slots = new DeliverySlots(limits({ capacity: 12 }));
    const slow = (await fill(slots, 'slow', (i) => `wh_slow_${i}`)).held;
    expect(slow).toBe(6);
    const other = (await fill(slots, 'other', (i) => `wh_other_${i}`)).held;
    expect(other).toBe(4);
    // The slow account may take no more while two accounts are busy (its share is now 4).
    expect(slots.acquire('slow', 'wh_slow_x')).toBe('account_share');
    expect(slots.acquire('third', 'wh_third')).toBe(true);
  });

  it('when an account has all its POSTs in flight, then its next jobs wait in line and each release serves the oldest', async () => {
    // Alone, the account may hold half of 8: two POSTs in flight and two jobs waiting.
    const slots = new DeliverySlots(limits({ perAccount: 2, capacity: 8 }));
    expect(slots.acquire('acc', 'wh_1')).toBe(true);
    expect(slots.acquire('acc', 'wh_2')).toBe(true);
    const served: string[] = [];
    const first = slots.acquire('acc', 'wh_3');
    const second = slots.acquire('acc', 'wh_4');
    expect(typeof first).toBe('object');
    void Promise.resolve(first).then((place) => place === true && served.push('wh_3'));
    void Promise.resolve(second).then((place) => place === true && served.push('wh_4'));
    // The line is within the account's share: one more is sent outside.
    expect(slots.acquire('acc', 'wh_5')).toBe('account_share');
    slots.release('acc', 'wh_1');
    await first;
    expect(served).toEqual(['wh_3']);
    slots.release('acc', 'wh_2');
    await second;
    expect(served).toEqual(['wh_3', 'wh_4']);
    // Another account was never held up by this one's line.
    expect(slots.acquire('other', 'wh_9')).toBe(true);
  });

  it('when a job waits in line longer than the wait allowed, then it is sent outside and its places are given back', async () => {
    const slots = new DeliverySlots(limits({ perAccount: 1, capacity: 4, maxWaitMs: 10 }));
    expect(slots.acquire('acc', 'wh_1')).toBe(true);
    await expect(Promise.resolve(slots.acquire('acc', 'wh_2'))).resolves.toBe('line_timeout');
    // What the waiting job held is free again: the account's line takes a job once more.
    const again = slots.acquire('acc', 'wh_3');
    expect(typeof again).toBe('object');
    await expect(Promise.resolve(again)).resolves.toBe('line_timeout');
  });

  it("when the subscription is at its limit, then the account's place is given back too", () => {
    const slots = new DeliverySlots(limits({ capacity: 4, perSubscription: 1 }));
    expect(slots.acquire('acc', 'wh_1')).toBe(true);
    expect(slots.acquire('acc', 'wh_1')).toBe('subscription_full');
    expect(slots.acquire('acc', 'wh_2')).toBe(true);
    slots.release('acc', 'wh_1');
    slots.release('acc', 'wh_2');
    // Nothing held: a newcomer alone may take half of the capacity again.
    expect(slots.acquire('other', 'wh_3')).toBe(true);
    expect(slots.acquire('other', 'wh_4')).toBe(true);
    expect(slots.acquire('other', 'wh_5')).toBe('account_share');
  });
});

/** An account holding its share of 4 (two POSTs), one of which has finished: its POSTs are moving. */
function busyAndMoving(slots: DeliverySlots): void {
  expect(slots.acquire('acc', 'wh_1')).toBe(true);
  expect(slots.acquire('acc', 'wh_2')).toBe(true);
  slots.release('acc', 'wh_1');
  expect(slots.acquire('acc', 'wh_1')).toBe(true);
}

describe('jobs from a lane', () => {
  it('when an account over its share has a job from its lane, then it gets its place (the lane bounds the account), counted in the shares', () => {
    const slots = new DeliverySlots(limits({ capacity: 12 }));
    const lanes = slots.forLanes();
    for (let i = 0; i < 10; i++) expect(lanes.acquire('busy', `wh_busy_${i}`)).toBe(true);
    // Its share of 12 alone is 6: a job of the account from a shared queue is refused…
    expect(slots.acquire('busy', 'wh_busy_shared')).toBe('account_share');
    // …a newcomer gets its share (12 / 3) and no more, the lane's 10 places counted in the total…
    for (let i = 0; i < 4; i++) expect(slots.acquire('newcomer', `wh_new_${i}`)).toBe(true);
    expect(slots.acquire('newcomer', 'wh_new_4')).toBe('account_share');
    // …and what the lane gives back is room for it again.
    for (let i = 0; i < 10; i++) lanes.release('busy', `wh_busy_${i}`);
    expect(slots.acquire('newcomer', 'wh_new_4')).toBe(true);
  });

  it("when a lane's job finds its subscription at its limit, then it waits for the subscription's next free place, oldest first", async () => {
    const slots = new DeliverySlots(limits({ perSubscription: 2 }));
    const lanes = slots.forLanes();
    expect(lanes.acquire('acc', 'a')).toBe(true);
    expect(lanes.acquire('acc', 'a')).toBe(true);
    const first = lanes.acquire('acc', 'a');
    const second = lanes.acquire('acc', 'a');
    expect([typeof first, typeof second]).toEqual(['object', 'object']);
    // A job of the shared queues for the same subscription is still refused (put back).
    expect(slots.acquire('acc', 'a')).toBe('subscription_full');
    // The account's other subscriptions are not held by it.
    expect(lanes.acquire('acc', 'b')).toBe(true);
    const order: string[] = [];
    void Promise.resolve(first).then((p) => order.push(`first ${String(p)}`));
    void Promise.resolve(second).then((p) => order.push(`second ${String(p)}`));
    lanes.release('acc', 'a');
    await Promise.resolve(first);
    expect(order).toEqual(['first true']);
    lanes.release('acc', 'a');
    await Promise.resolve(second);
    expect(order).toEqual(['first true', 'second true']);
  });

  it("when a lane's job waits for its subscription longer than the wait allowed, then it is put back, holding nothing", async () => {
    const slots = new DeliverySlots(limits({ perSubscription: 1, parkMaxMs: 10 }));
    const lanes = slots.forLanes();
    expect(lanes.acquire('acc', 'a')).toBe(true);
    await expect(Promise.resolve(lanes.acquire('acc', 'a'))).resolves.toBe('subscription_full');
    lanes.release('acc', 'a');
    expect(lanes.acquire('acc', 'a')).toBe(true);
  });
});

describe('waits outside for a subscription at its limit', () => {
  it("when a quarter of a lane's jobs already wait for one subscription, then the next is put back at once and the account's others still wait", () => {
    const lanes = new DeliverySlots(limits({ perSubscription: 1, laneCapacity: 8 })).forLanes();
    expect(lanes.acquire('acc', 'hangs')).toBe(true);
    expect(typeof lanes.acquire('acc', 'hangs')).toBe('object');
    expect(typeof lanes.acquire('acc', 'hangs')).toBe('object');
    expect(lanes.acquire('acc', 'hangs')).toBe('subscription_full');
    expect(lanes.acquire('acc', 'other')).toBe(true);
    expect(typeof lanes.acquire('acc', 'other')).toBe('object');
  });

  it('when a subscription has jobs ahead of a refused one, then it waits what they need at the pace its POSTs take, within 15 minutes', () => {
    const slots = new DeliverySlots(limits({ perSubscription: 2, laneCapacity: 1000, maxWaitMs: 5000 }));
    const lanes = slots.forLanes();
    // Two POSTs in flight, each taking 5 s (as the last ones did), and 48 jobs waiting here.
    lanes.acquire('acc', 'hangs');
    lanes.acquire('acc', 'hangs');
    lanes.release('acc', 'hangs', 5000);
    lanes.acquire('acc', 'hangs');
    for (let i = 0; i < 48; i++) lanes.acquire('acc', 'hangs');
    // (2 + 48) × 5 s / 2 at once = 125 s, ±20 %.
    const first = slots.sendAway('acc', 'hangs', 'subscription_full', 0);
    expect(first).toBeGreaterThanOrEqual(100_000);
    expect(first).toBeLessThanOrEqual(150_000);
    // Each job put back counts ahead of the next until it comes back: 50 away, (2 + 48 + 50) × 5 s / 2.
    for (let i = 0; i < 49; i++) slots.sendAway('acc', 'hangs', 'subscription_full', 0);
    const withAway = slots.sendAway('acc', 'hangs', 'subscription_full', 0);
    expect(withAway).toBeGreaterThanOrEqual(200_000);
    expect(withAway).toBeLessThanOrEqual(300_000);
    for (let i = 0; i < 51; i++) slots.cameBack('hangs');
    expect(slots.sendAway('acc', 'hangs', 'subscription_full', 0)).toBeLessThanOrEqual(150_000);
    // Another refusal, or a subscription with nothing ahead, waits the put-back's own 1 s doubling.
    expect(slots.sendAway('acc', 'hangs', 'account_share', 0)).toBeLessThanOrEqual(1200);
    expect(slots.sendAway('acc', 'idle', 'subscription_full', 3)).toBeGreaterThanOrEqual(6400);
    expect(slots.sendAway('acc', 'idle', 'subscription_full', 3)).toBeLessThanOrEqual(9600);
  });

  it("when an account's lane jobs already fill half a lane waiting for its subscriptions, then its next is put back and the lane keeps room for others", () => {
    const lanes = new DeliverySlots(limits({ perSubscription: 1, laneCapacity: 8 })).forLanes();
    // Four subscriptions at their limit, each with one job waiting: half of a lane of 8.
    for (const sub of ['h1', 'h2', 'h3', 'h4']) {
      expect(lanes.acquire('hostile', sub)).toBe(true);
      expect(typeof lanes.acquire('hostile', sub)).toBe('object');
    }
    expect(lanes.acquire('hostile', 'h5')).toBe(true);
    expect(lanes.acquire('hostile', 'h5')).toBe('subscription_full');
    // Another account's subscription at its limit still waits in the worker.
    expect(lanes.acquire('other', 'o1')).toBe(true);
    expect(typeof lanes.acquire('other', 'o1')).toBe('object');
  });

  it('when the jobs ahead would take hours, then the wait is 15 minutes', () => {
    const slots = new DeliverySlots(limits({ perSubscription: 1, laneCapacity: 100_000, maxWaitMs: 60_000 }));
    const lanes = slots.forLanes();
    for (let i = 0; i < 1000; i++) lanes.acquire('acc', 'hangs');
    expect(slots.sendAway('acc', 'hangs', 'subscription_full', 0)).toBe(15 * 60_000);
  });
});

describe('put-backs within a budget', () => {
  it("when the put-back budget is spent, then a job over its account's share waits in the worker and takes the first place its account frees", async () => {
    // Alone, the account may hold half of 4; the budget puts back one job a second.
    const slots = new DeliverySlots(limits({ capacity: 4, putBacksPerSecond: 1 }));
    busyAndMoving(slots);
    expect(slots.acquire('acc', 'wh_3')).toBe('account_share');
    const waiting = slots.acquire('acc', 'wh_4');
    expect(typeof waiting).toBe('object');
    slots.release('acc', 'wh_1');
    await expect(Promise.resolve(waiting)).resolves.toBe(true);
    // The job that waited holds no more than the account's share: a newcomer still gets a place.
    expect(slots.acquire('other', 'wh_9')).toBe(true);
  });

  it('when more jobs wait over their share than the budget puts back, then the oldest go first as it refills', async () => {
    const slots = new DeliverySlots(limits({ capacity: 4, putBacksPerSecond: 20 }));
    busyAndMoving(slots);
    // The budget's tokens go on the first refusals; the next job over the share waits.
    let oldest = slots.acquire('acc', 'wh_old');
    while (typeof oldest === 'string') oldest = slots.acquire('acc', 'wh_old');
    const order: string[] = [];
    const settled = [
      { name: 'wh_old', place: oldest },
      { name: 'wh_mid', place: slots.acquire('acc', 'wh_mid') },
      { name: 'wh_new', place: slots.acquire('acc', 'wh_new') },
    ].map(async ({ name, place }) => {
      const got = await place;
      order.push(name);
      return got;
    });
    expect(await Promise.all(settled)).toEqual(['account_share', 'account_share', 'account_share']);
    expect(order).toEqual(['wh_old', 'wh_mid', 'wh_new']);
  });

  it('when a job waits over its share longer than the wait allowed, then it is put back without spending the budget', async () => {
    const slots = new DeliverySlots(limits({ capacity: 4, putBacksPerSecond: 1, maxWaitMs: 10 }));
    busyAndMoving(slots);
    expect(slots.acquire('acc', 'wh_3')).toBe('account_share');
    await expect(Promise.resolve(slots.acquire('acc', 'wh_4'))).resolves.toBe('account_share');
    // The budget's token was not taken by the wait's end: the next refusal still waits.
    const next = slots.acquire('acc', 'wh_5');
    expect(typeof next).toBe('object');
    await expect(Promise.resolve(next)).resolves.toBe('account_share');
  });

  it('when none of an account’s POSTs has finished for a second, then its jobs over its share are put back at once, whatever the budget', () => {
    // Receivers that hang free no place: waiting in the worker would only hold what is behind.
    jest.useFakeTimers();
    try {
      const slots = new DeliverySlots(limits({ capacity: 4, putBacksPerSecond: 1 }));
      expect(slots.acquire('acc', 'wh_1')).toBe(true);
      expect(slots.acquire('acc', 'wh_2')).toBe(true);
      jest.advanceTimersByTime(1100);
      for (let i = 3; i < 10; i++) expect(slots.acquire('acc', `wh_${i}`)).toBe('account_share');
    } finally {
      jest.useRealTimers();
    }
  });

  it('when an account with jobs waiting over its share stops finishing POSTs, then those jobs are put back without the budget', async () => {
    jest.useFakeTimers();
    try {
      // A budget that would take 100 s to put one back: only the account's stall can.
      const slots = new DeliverySlots(limits({ capacity: 4, putBacksPerSecond: 0.01 }));
      busyAndMoving(slots);
      const waiting = slots.acquire('acc', 'wh_3');
      expect(typeof waiting).toBe('object');
      jest.advanceTimersByTime(1500);
      await expect(Promise.resolve(waiting)).resolves.toBe('account_share');
    } finally {
      jest.useRealTimers();
    }
  });
});
