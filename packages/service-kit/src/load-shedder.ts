import { isStoreTimeLimitExceeded, type ReadLimit } from './mongo';
import { fail, succeed, type Failure, type Result } from './result';

/**
 * At most `max` calls at once; one more is refused at once (SERVICE_UNAVAILABLE, retry after a
 * second: a 503 with Retry-After) instead of
 * queueing on a store that is already the bottleneck. For fallback paths: while a read model is
 * away, every read lands on the store's query engine, which (FerretDB above all) cannot carry the
 * whole read load — unbounded, the queue grows until clients wait out the gateway's timeout
 * (504) and the store starves the writes too.
 *
 * An admitted call that has not returned within `deadlineMs` is refused as well, so that a slow
 * query on a saturated store reaches the client as a retryable 503 before the gateway's timeout
 * turns it into a 504; the call keeps its place until it really ends, so the store never has
 * more than `max` of them. The call is handed the deadline as its store reads' time limit
 * (`maxTimeMS`): the store stops them at the deadline too and the place is free then, rather
 * than held by a read for a client already answered; the store's refusal at that limit is
 * answered as the deadline is.
 */
export class LoadShedder {
  private running = 0;

  constructor(
    readonly max: number,
    private readonly what: string,
    private readonly deadlineMs = 5000,
  ) {}

  /** The call's value, or SERVICE_UNAVAILABLE when it was refused or outlasted the deadline. */
  async run<T>(call: (within: Required<ReadLimit>) => Promise<T>): Promise<Result<T, 'SERVICE_UNAVAILABLE'>> {
    if (this.running >= this.max) return this.busy();
    this.running += 1;
    const work = call({ maxTimeMS: this.deadlineMs }).finally(() => (this.running -= 1));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<Failure<'SERVICE_UNAVAILABLE'>>((resolve) => {
      timer = setTimeout(() => resolve(this.busy()), this.deadlineMs);
    });
    work.catch(() => undefined); // refused at the deadline already: its late failure is nobody's
    try {
      const answered = work.then(succeed, (err: unknown) => {
        if (isStoreTimeLimitExceeded(err)) return this.busy();
        throw err;
      });
      return await Promise.race([answered, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private busy(): Failure<'SERVICE_UNAVAILABLE'> {
    return fail('SERVICE_UNAVAILABLE', `${this.what} is busy. Retry shortly.`, { retryAfter: 1 });
  }
}
