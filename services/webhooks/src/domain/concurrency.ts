import { metrics } from '@signal/service-kit';
import { deferralDelayMs } from './delivery-jobs';
import type { ReadDebt, ReadDebts } from './ports';

/**
 * Shares the jobs a worker holds among accounts. A consumer holds at most `capacity` jobs (its
 * prefetch) and an attempt holds its job until the receiver responds or times out, so an
 * account whose receivers hang could take every job the worker holds and make every other
 * account's deliveries wait in the queue for its timeouts.
 *
 * An account's fair share is `capacity / (busy accounts + 1)`: the accounts holding jobs here,
 * itself counted, and one share kept for an account not busy yet. Below its share an account
 * may always take a place; above it, only while a fair share of the capacity stays free after
 * it (an account with a burst uses what others leave idle, but never the room a newcomer
 * needs). One slow account holds at most half the jobs, two a third each plus what is idle,
 * and so on. A job refused here holds no place: it is put back to wait outside the worker, or
 * waits over its share in the worker when put-backs are over their budget (DeliverySlots).
 */
export class AccountShares {
  private readonly held = new Map<string, number>();
  private total = 0;
  constructor(private readonly capacity: number) {}

  /** The fair share of `accountId` now. */
  shareOf(accountId: string): number {
    const busy = this.held.size + (this.held.has(accountId) ? 0 : 1);
    return Math.max(1, Math.floor(this.capacity / (busy + 1)));
  }

  /** The most `accountId` could hold now: what the others' room leaves it. */
  ceilingOf(accountId: string): number {
    return Math.max(this.shareOf(accountId), this.capacity - this.shareOf(accountId));
  }

  tryAcquire(accountId: string): boolean {
    const n = this.held.get(accountId) ?? 0;
    const share = this.shareOf(accountId);
    if (n >= share && this.total + 1 > this.capacity - share) return false;
    this.held.set(accountId, n + 1);
    this.total += 1;
    return true;
  }

  /** Counts a place held whatever the share (a job from a lane: see `DeliverySlots.forLanes`). */
  take(accountId: string): void {
    this.held.set(accountId, (this.held.get(accountId) ?? 0) + 1);
    this.total += 1;
  }

  release(accountId: string): void {
    const n = this.held.get(accountId);
    if (n === undefined) return;
    this.total -= 1;
    if (n <= 1) this.held.delete(accountId);
    else this.held.set(accountId, n - 1);
  }
}

export interface SlotLimits {
  /** Jobs one delivery consumer holds (its prefetch): what the accounts share. */
  capacity: number;
  /** POSTs in flight per account; as many more may wait in the account's line. */
  perAccount: number;
  /** POSTs in flight or waiting per subscription (and never more than a quarter of its account's). */
  perSubscription: number;
  /** Longest a job waits in its account's line, or over its share, before it waits outside the worker. */
  maxWaitMs: number;
  /** Jobs over their account's share put back to wait outside the worker, at most, a second. */
  putBacksPerSecond: number;
  /** Jobs a worker takes from one lane at once (its prefetch): a quarter may wait for one subscription. */
  laneCapacity: number;
  /** Longest a lane's job waits in the worker for a place of its subscription. */
  parkMaxMs: number;
}

/**
 * One subscription takes at most this part of what its account may have in flight, so one slow
 * receiver (seconds an attempt) leaves most of its account's places to the account's others.
 */
const SUBSCRIPTION_PART = 4;

/**
 * Why an attempt gets no place and waits outside the worker: its subscription has its limit in
 * flight or waiting, its account holds its share of the worker's jobs, or its wait in the
 * account's line ran out.
 */
export type Refusal = 'subscription_full' | 'account_share' | 'line_timeout';

/** An attempt's places, held (true), or why not. */
export type Place = true | Refusal;

/** What an attempt asks of the worker's places: them, then to give them back. */
export interface AttemptPlaces {
  acquire(accountId: string, subscriptionId: string): Promise<Place> | Place;
  /** Gives the places back; `tookMs`, how long the POST took, paces the subscription's waits. */
  release(accountId: string, subscriptionId: string, tookMs?: number): void;
  /**
   * Counts a job refused its places as put back (away until `cameBack`) and returns how long it
   * waits outside the worker, after `deferred` earlier put-backs.
   */
  sendAway(accountId: string, subscriptionId: string, refusal: Refusal, deferred: number): number;
  /** A job put back before has come back for `subscriptionId`. */
  cameBack(subscriptionId: string): void;
}

/** The longest wait outside for a subscription at its limit, however long its line. */
const MAX_WAIT_OUTSIDE_MS = 15 * 60_000;

interface Waiter {
  grant(place: Promise<Place> | Place): void;
  timer: NodeJS.Timeout;
}

/** A job over its account's share, waiting in the worker for a place or its turn to be put back. */
interface Held {
  accountId: string;
  subscriptionId: string;
  grant(place: Promise<Place> | Place): void;
  timer: NodeJS.Timeout;
  done: boolean;
}

/**
 * Put-backs a second, as a bucket of tokens filled at that rate and holding one second's worth:
 * a burst of refusals is put back at once, a steady stream at the rate.
 */
class PutBackBudget {
  private tokens: number;
  private filledAt = Date.now();
  constructor(private readonly perSecond: number) {
    this.tokens = perSecond;
  }

  tryTake(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.filledAt) * this.perSecond) / 1000);
    this.filledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Milliseconds until the next token. */
  msToNext(): number {
    return Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.perSecond));
  }
}

interface AccountLine {
  /** POSTs in flight. */
  running: number;
  /** Jobs waiting for one of them to finish, oldest first (a Set keeps insertion order). */
  waiting: Set<Waiter>;
  /** When a POST of the account last finished, or the line began. */
  finishedAt: number;
}

/**
 * An account with no POST finished for this long frees no place soon (its receivers hang): its
 * jobs over its share are put back whatever the budget, as waiting here would only hold places
 * from what is behind them in the queue. As long as a put-back's own wait outside.
 */
const STALLED_MS = 1000;

/**
 * The places an attempt must hold for its POST, taken together: a fair share of the worker's
 * jobs for its account (AccountShares), a place in its subscription, and one of its account's
 * POSTs in flight. An account with all its POSTs in flight keeps the job in the worker, unacked,
 * in the account's own line, and the next POST of the account to finish hands its place to the
 * oldest job there: no trip through the broker, no second spent waiting for a place freed in
 * milliseconds. The line is bounded two ways: what the account holds, waiting or posting, is
 * within its fair share (a waiting job takes no room another account needs), and a job not
 * served within `maxWaitMs` leaves to wait outside the worker as before. A subscription at its
 * own limit (a slow receiver) is not served from the line: its jobs wait outside the worker, so
 * they never stand before the account's other subscriptions.
 *
 * A job over its account's share is put back to wait outside the worker, within a budget of
 * put-backs a second. A put-back frees the job's place in the worker for whatever is next in the
 * queue (another account's delivery, behind a busy account's backlog), and costs the broker two
 * persistent writes and a dead-lettering; while the account stays over its share the broker
 * refills that place at once with the account's next job, put back in turn, so without a bound
 * the put-backs take the CPU the worker needs to catch up (docs/benchmarks.md, webhooks). Past
 * the budget the job waits here, unacked, outside the shares (it holds no place another account
 * could take): the first place its account frees is its own, without a trip through the broker,
 * and the oldest of the jobs waiting is put back as the budget refills, so the queue behind is
 * still reached; none waits longer than `maxWaitMs`. Oldest, not newest: each of the worker's
 * queues (first attempts, due attempts) has its own prefetch, and the newest come from whichever
 * queue still delivers, so putting them back would leave the other queue's places held, and
 * what waits behind them there, for the whole wait. Only an account whose POSTs are finishing
 * waits so: one with none finished for `STALLED_MS` (receivers that hang) frees no place soon,
 * and its jobs over its share are put back at once, as many as the broker takes, so that what
 * is behind them is reached.
 */
export class DeliverySlots implements AttemptPlaces {
  private readonly shares: AccountShares;
  private readonly subscriptions = new Map<string, number>();
  private readonly accounts = new Map<string, AccountLine>();
  private readonly putBacks: PutBackBudget;
  /** Jobs from lanes waiting for a place of their subscription, by subscription, oldest first. */
  private readonly parked = new Map<string, Set<Waiter>>();
  private parkedCount = 0;
  /** How long a POST of each subscription busy here takes, on average (dropped when it is idle). */
  private readonly postMs = new Map<string, number>();
  /** Jobs of each subscription put back by this worker and not come back yet (to any worker). */
  private readonly away = new Map<string, number>();
  /** Lane jobs waiting for their subscription, by account. */
  private readonly parkedByAccount = new Map<string, number>();
  /** Jobs over their account's share waiting here, by account, oldest first. */
  private readonly held = new Map<string, Set<Held>>();
  /** The same jobs in the order they came, from `heldNext` on; ones already gone are skipped. */
  private heldOrder: Held[] = [];
  private heldNext = 0;
  private heldCount = 0;
  private drainTimer: NodeJS.Timeout | undefined;

  constructor(private readonly limits: SlotLimits) {
    this.shares = new AccountShares(limits.capacity);
    this.putBacks = new PutBackBudget(limits.putBacksPerSecond);
    // Exported from the start, so that a dashboard reads 0 rather than nothing.
    metrics.webhookJobsWaitingOverShare().set(0);
    metrics.webhookJobsWaitingForSubscription().set(0);
  }

  /** How many POSTs in flight or waiting one subscription of `accountId` may have now. */
  subscriptionLimit(accountId: string): number {
    const account = Math.min(this.limits.perAccount, this.shares.ceilingOf(accountId));
    return Math.min(this.limits.perSubscription, Math.max(1, Math.floor(account / SUBSCRIPTION_PART)));
  }

  /**
   * Resolves true when the attempt holds its places (release them with `release`), at once or
   * after its turn in the account's line or over its share; the refusal when it must wait
   * outside the worker.
   */
  acquire(accountId: string, subscriptionId: string): Promise<Place> | Place {
    const place = this.place(accountId, subscriptionId);
    if (place !== 'account_share' || this.stalled(accountId, Date.now()) || this.putBacks.tryTake())
      return place;
    return new Promise<Place>((grant) => this.hold(accountId, subscriptionId, grant));
  }

  /**
   * The same places for jobs taken from a lane. The lane's prefetch is what an account may take
   * of the worker from it (fan-out puts an account's first attempts in its lanes), so these jobs are
   * never refused or held for the account's share: refused, one put back would make room only
   * for the account's next job from the same lane, round the broker for nothing. They count in
   * the shares all the same, so that jobs from the shared queues see what the worker holds.
   *
   * A job from a lane whose subscription is at its limit waits here, in the subscription's own
   * line, for one of its POSTs to finish, at most `parkMaxMs`, and while fewer than a quarter of
   * a lane's jobs wait for that subscription; otherwise it is put back (`sendAway`). Put
   * back at once (as jobs from the shared queues are), every job of a receiver that hangs went
   * round the broker again and again while it waited: 25 receivers of one account that hang or
   * fail made 26,000 put-backs in 35 s, RabbitMQ took a core, and every other account's
   * deliveries waited for the broker (docs/benchmarks.md, "Lanes of first attempts"). Waiting
   * here costs only the account: the jobs hold places of its lanes' prefetch.
   */
  forLanes(): AttemptPlaces {
    return {
      acquire: (accountId, subscriptionId) => this.place(accountId, subscriptionId, true),
      release: (accountId, subscriptionId, tookMs) => this.release(accountId, subscriptionId, tookMs),
      sendAway: (accountId, subscriptionId, refusal, deferred) =>
        this.sendAway(accountId, subscriptionId, refusal, deferred),
      cameBack: (subscriptionId) => this.cameBack(subscriptionId),
    };
  }

  /**
   * Counts a refused job as away and returns how long it waits outside the worker: 1 s doubling to 16 s (±20 %) after each
   * put-back, and for a subscription at its limit at least what the jobs ahead of it need at the
   * pace its POSTs take: (POSTs in flight + jobs waiting for it here + jobs this worker put back
   * that have not come back) × a POST's time / its limit, at most 15 minutes. A subscription
   * whose receiver hangs (5 s a POST, 10 at once, 250 jobs waiting) so sends its put-backs away
   * for about two minutes, not 1, 2, 4, … seconds: each trip through the broker costs ~0.5 ms of
   * its CPU, and at 1 s doubling one account's receivers that hang sent hundreds a second round
   * it for as long as they hung (a black-box burst: ~400–500 a second for minutes, every other
   * account's deliveries p90 12–16 s). The jobs away count once the lanes are empty: those put
   * back in a burst come back together, and seeing only the POSTs in flight they went round again
   * every few seconds (the next black-box run: up to ~1,000 a second for minutes).
   */
  sendAway(accountId: string, subscriptionId: string, refusal: Refusal, deferred: number): number {
    const backoff = deferralDelayMs(deferred);
    const away = this.away.get(subscriptionId) ?? 0;
    this.away.set(subscriptionId, away + 1);
    if (refusal !== 'subscription_full') return backoff;
    const ahead =
      (this.subscriptions.get(subscriptionId) ?? 0) + (this.parked.get(subscriptionId)?.size ?? 0) + away;
    const perPostMs = this.postMs.get(subscriptionId) ?? this.limits.maxWaitMs;
    const paced = (ahead * perPostMs) / this.subscriptionLimit(accountId);
    return Math.min(MAX_WAIT_OUTSIDE_MS, Math.max(backoff, Math.round(paced * (0.8 + 0.4 * Math.random()))));
  }

  cameBack(subscriptionId: string): void {
    const away = (this.away.get(subscriptionId) ?? 0) - 1;
    if (away > 0) this.away.set(subscriptionId, away);
    else this.away.delete(subscriptionId);
  }

  /** Gives back an attempt's places; the oldest job in its account's line takes the POST's. */
  release(accountId: string, subscriptionId: string, tookMs?: number): void {
    const line = this.accounts.get(accountId);
    if (line === undefined || line.running === 0) return;
    if (tookMs !== undefined) {
      // A moving average over about the last ten POSTs of the subscription.
      const before = this.postMs.get(subscriptionId);
      this.postMs.set(subscriptionId, before === undefined ? tookMs : before + (tookMs - before) / 10);
    }
    line.running -= 1;
    line.finishedAt = Date.now();
    this.letGo(accountId, subscriptionId, line);
    const next = line.waiting.values().next();
    if (next.done !== true && line.running < this.limits.perAccount) {
      const waiter = next.value;
      line.waiting.delete(waiter);
      clearTimeout(waiter.timer);
      line.running += 1;
      waiter.grant(true);
    }
    this.admitHeld(accountId);
    this.unpark(accountId, subscriptionId);
  }

  /** Places for one job now: held, a wait in the account's line, or why not. */
  private place(accountId: string, subscriptionId: string, fromLane = false): Promise<Place> | Place {
    const sub = this.subscriptions.get(subscriptionId) ?? 0;
    if (sub >= this.subscriptionLimit(accountId))
      return fromLane ? this.park(accountId, subscriptionId) : 'subscription_full';
    if (fromLane) this.shares.take(accountId);
    else if (!this.shares.tryAcquire(accountId)) return 'account_share';
    // A new line counts as moving: its first POSTs have had no time to finish.
    const line = this.accounts.get(accountId) ?? {
      running: 0,
      waiting: new Set<Waiter>(),
      finishedAt: Date.now(),
    };
    const mustWait = line.running >= this.limits.perAccount;
    this.accounts.set(accountId, line);
    this.subscriptions.set(subscriptionId, sub + 1);
    if (!mustWait) {
      line.running += 1;
      return true;
    }
    return new Promise<Place>((resolve) => {
      const waiter: Waiter = {
        grant: resolve,
        timer: setTimeout(() => {
          line.waiting.delete(waiter);
          this.letGo(accountId, subscriptionId, line);
          resolve('line_timeout');
          this.admitHeld(accountId);
          this.unpark(accountId, subscriptionId);
        }, this.limits.maxWaitMs),
      };
      line.waiting.add(waiter);
    });
  }

  /**
   * Keeps a lane's job for a subscription at its limit until one of its places is free, or
   * `parkMaxMs`; refused at once when a quarter of a lane's jobs already wait for the
   * subscription, or half of them for the account: one receiver that hangs never holds all its
   * account's lane, and an account's receivers never hold all of a lane that is another
   * account's own too (a black-box run: 20 receivers that hang held a lane whole, and an account
   * sharing it waited there for the minute it takes a job to move to the shared queue).
   */
  private park(accountId: string, subscriptionId: string): Promise<Place> | Place {
    const waiting = this.parked.get(subscriptionId)?.size ?? 0;
    const ofAccount = this.parkedByAccount.get(accountId) ?? 0;
    if (
      waiting >= Math.max(1, Math.floor(this.limits.laneCapacity / SUBSCRIPTION_PART)) ||
      ofAccount >= Math.max(1, Math.floor(this.limits.laneCapacity / 2))
    )
      return 'subscription_full';
    return new Promise<Place>((resolve) => {
      const line = this.parked.get(subscriptionId) ?? new Set<Waiter>();
      this.parked.set(subscriptionId, line);
      const waiter: Waiter = {
        grant: resolve,
        timer: setTimeout(() => {
          this.unparkOne(accountId, subscriptionId, line, waiter);
          resolve('subscription_full');
        }, this.limits.parkMaxMs),
      };
      line.add(waiter);
      this.parkedCount += 1;
      this.parkedByAccount.set(accountId, ofAccount + 1);
      metrics.webhookJobsWaitingForSubscription().set(this.parkedCount);
    });
  }

  private unparkOne(accountId: string, subscriptionId: string, line: Set<Waiter>, waiter: Waiter): void {
    line.delete(waiter);
    if (line.size === 0) this.parked.delete(subscriptionId);
    clearTimeout(waiter.timer);
    this.parkedCount -= 1;
    const ofAccount = (this.parkedByAccount.get(accountId) ?? 1) - 1;
    if (ofAccount > 0) this.parkedByAccount.set(accountId, ofAccount);
    else this.parkedByAccount.delete(accountId);
    metrics.webhookJobsWaitingForSubscription().set(this.parkedCount);
  }

  /** The oldest lane job waiting for `subscriptionId` takes the place it has again, if it has one. */
  private unpark(accountId: string, subscriptionId: string): void {
    const line = this.parked.get(subscriptionId);
    const next = line?.values().next();
    if (line === undefined || next === undefined || next.done === true) return;
    if ((this.subscriptions.get(subscriptionId) ?? 0) >= this.subscriptionLimit(accountId)) return;
    const waiter = next.value;
    this.unparkOne(accountId, subscriptionId, line, waiter);
    waiter.grant(this.place(accountId, subscriptionId, true));
  }

  /** What one job held in the account's share and its subscription, given back. */
  private letGo(accountId: string, subscriptionId: string, line: AccountLine): void {
    this.shares.release(accountId);
    const sub = (this.subscriptions.get(subscriptionId) ?? 1) - 1;
    if (sub <= 0) {
      this.subscriptions.delete(subscriptionId);
      if (!this.parked.has(subscriptionId)) this.postMs.delete(subscriptionId);
    } else this.subscriptions.set(subscriptionId, sub);
    if (line.running === 0 && line.waiting.size === 0) this.accounts.delete(accountId);
  }

  /** Keeps a job over its account's share here until a place, its turn to be put back, or `maxWaitMs`. */
  private hold(accountId: string, subscriptionId: string, grant: Held['grant']): void {
    const job: Held = {
      accountId,
      subscriptionId,
      grant,
      done: false,
      timer: setTimeout(() => this.putBack(job), this.limits.maxWaitMs),
    };
    const jobs = this.held.get(accountId) ?? new Set<Held>();
    this.held.set(accountId, jobs);
    jobs.add(job);
    this.heldOrder.push(job);
    this.heldCount += 1;
    metrics.webhookJobsWaitingOverShare().set(this.heldCount);
    if (this.heldOrder.length - this.heldNext > 2 * this.heldCount + 64) {
      this.heldOrder = this.heldOrder.slice(this.heldNext).filter((j) => !j.done);
      this.heldNext = 0;
    }
    this.drainWhenBudgetAllows();
  }

  private unhold(job: Held): void {
    job.done = true;
    clearTimeout(job.timer);
    this.heldCount -= 1;
    metrics.webhookJobsWaitingOverShare().set(this.heldCount);
    const jobs = this.held.get(job.accountId);
    jobs?.delete(job);
    if (jobs?.size === 0) this.held.delete(job.accountId);
  }

  /** Sends a waiting job to wait outside the worker. */
  private putBack(job: Held): void {
    this.unhold(job);
    job.grant('account_share');
  }

  /** The account's oldest jobs over its share take the places it has again, while it has them. */
  private admitHeld(accountId: string): void {
    const jobs = this.held.get(accountId);
    if (jobs === undefined) return;
    for (const job of jobs) {
      const place = this.place(accountId, job.subscriptionId);
      if (place === 'account_share') return;
      this.unhold(job);
      job.grant(place);
    }
  }

  private drainWhenBudgetAllows(): void {
    if (this.drainTimer !== undefined) return;
    this.drainTimer = setTimeout(
      () => {
        this.drainTimer = undefined;
        this.drain();
      },
      Math.min(this.putBacks.msToNext(), STALLED_MS / 4),
    );
    // The jobs waiting keep their own timers; this one alone never holds a stopping process.
    this.drainTimer.unref();
  }

  /** Whether `accountId` has had no POST finish for `STALLED_MS`. */
  private stalled(accountId: string, now: number): boolean {
    return now - (this.accounts.get(accountId)?.finishedAt ?? 0) > STALLED_MS;
  }

  /**
   * Puts back every job waiting for an account that stalled since, then the oldest others, as
   * many as the budget allows now.
   */
  private drain(): void {
    const now = Date.now();
    for (const [accountId, jobs] of this.held) {
      if (this.stalled(accountId, now)) for (const job of jobs) this.putBack(job);
    }
    while (this.heldCount > 0 && this.putBacks.tryTake()) {
      let job = this.heldOrder[this.heldNext++];
      while (job?.done === true) job = this.heldOrder[this.heldNext++];
      if (job === undefined) break;
      this.putBack(job);
    }
    if (this.heldCount > 0) this.drainWhenBudgetAllows();
    else {
      this.heldOrder = [];
      this.heldNext = 0;
    }
  }
}

/**
 * A read's place (`release` gives it back), or why not and how long until the account may read
 * again: its reads in progress are as many as it may have, or took the time it may have lately.
 */
export type ReadPlace =
  | { ok: true; /** Never rejects. */ release: (examined?: number) => Promise<void> }
  | { ok: false; why: 'in_progress' | 'time'; retryAfterS: number };

/**
 * What one read is charged at most: a floor, and so much a delivery it read (its subscription's
 * history, or the part a filter folds). A read's wall time includes its wait for the store while
 * other accounts load it: charged whole, a three-row list that waited 2.5 s behind them was
 * refused its next read (a black-box run), so a read owes no more than its size could cost.
 */
const READ_FLOOR_MS = 20;
const READ_MS_PER_DELIVERY = 1;

/** How long a count of the accounts owing is used before it is read again. */
const OWING_COUNT_MS = 1000;

/** Tries of a debt's write that meet another process's write first, before the charge is let go. */
const DEBT_WRITE_TRIES = 5;

/**
 * Reads whose cost follows a subscription's history (a delivery list: docs/benchmarks.md, "A
 * page of a subscription's deliveries"), bounded per account two ways. At most `perAccount` at
 * once in this process; and their time, across every process: each read's time is owed (at most
 * what its size could cost: `READ_MS_PER_DELIVERY`) in the shared `debts`, paid back at
 * `msPerSecond` each second, and an account owing more than `burstMs` waits until it owes less.
 * The store is shared: bounded by count alone, one account's reads of a long history, one after
 * another, took most of the store's CPU and made another account's short list 7–18× slower (a
 * black-box run: two reads at a time of 0.4 s each, the other account's p50 49 → 374–884 ms); the
 * debt is kept in the store, since kept per process, N API replicas gave an account N times the
 * rate. The accounts that owe share twice one account's rate: one alone pays back at
 * `msPerSecond`, four at half of it each, so several accounts reading long histories together
 * take no more of the store than two would.
 */
export class AccountReadSlots {
  private readonly held = new Map<string, number>();
  private owingCount: { value: number; at: number } | undefined;
  constructor(
    private readonly perAccount: number,
    private readonly msPerSecond: number,
    private readonly burstMs: number,
    private readonly debts: ReadDebts,
    /** Wall-clock time: debts written by one process are read by another. */
    private readonly now: () => number = Date.now,
  ) {}

  /** A place for one read of `accountId`, or the seconds until it may read again. */
  async tryAcquire(accountId: string): Promise<ReadPlace> {
    const n = this.held.get(accountId) ?? 0;
    if (n >= this.perAccount) return { ok: false, why: 'in_progress', retryAfterS: 1 };
    // Held before the store is asked, so reads arriving meanwhile count it.
    this.held.set(accountId, n + 1);
    const giveBack = () => {
      const left = (this.held.get(accountId) ?? 1) - 1;
      if (left <= 0) this.held.delete(accountId);
      else this.held.set(accountId, left);
    };
    let started: number;
    try {
      started = this.now();
      const rate = await this.rate(started);
      const owed = owedAt(await this.debts.get(accountId), started, rate);
      if (owed > this.burstMs) {
        giveBack();
        const retryAfterS = Math.max(1, Math.ceil((owed - this.burstMs) / rate));
        return { ok: false, why: 'time', retryAfterS };
      }
    } catch (err) {
      giveBack();
      throw err;
    }
    let released = false;
    return {
      ok: true,
      release: async (examined?: number) => {
        if (released) return;
        released = true;
        giveBack();
        const ended = this.now();
        const took = ended - started;
        const charged =
          examined === undefined ? took : Math.min(took, READ_FLOOR_MS + examined * READ_MS_PER_DELIVERY);
        // The read succeeded whatever happens to its charge: a debt that cannot be written now
        // (the store failing, which fails the reads too) leaves this one read uncharged.
        await this.charge(accountId, charged, ended).catch(() => undefined);
      },
    };
  }

  /** Adds `ms` to what `accountId` owes, over any other process's write meanwhile. */
  private async charge(accountId: string, ms: number, now: number): Promise<void> {
    const rate = await this.rate(now);
    for (let i = 0; i < DEBT_WRITE_TRIES; i++) {
      const was = await this.debts.get(accountId);
      const owed = owedAt(was, now, rate) + ms;
      const next = { ms: owed, at: now, clearAt: now + (owed * 1000) / rate };
      if (await this.debts.swap(accountId, was, next)) {
        // An account that owes from now on shares the rate at once, not at the next count.
        if (owedAt(was, now, rate) === 0 && this.owingCount !== undefined) this.owingCount.value += 1;
        return;
      }
    }
  }

  /** The rate each owing account pays back at now: its own, shared past two accounts' worth. */
  private async rate(now: number): Promise<number> {
    if (this.owingCount === undefined || now - this.owingCount.at >= OWING_COUNT_MS)
      this.owingCount = { value: await this.debts.owing(now), at: now };
    return Math.min(this.msPerSecond, (2 * this.msPerSecond) / Math.max(1, this.owingCount.value));
  }
}

/** What a debt comes to at `now`, paid back at `rate` ms a second since it was written. */
function owedAt(debt: ReadDebt | undefined, now: number, rate: number): number {
  if (debt === undefined) return 0;
  return Math.max(0, debt.ms - (Math.max(0, now - debt.at) * rate) / 1000);
}
