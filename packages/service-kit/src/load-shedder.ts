import { AppError } from './app-error';

/**
 * At most `max` calls at once; one more is refused at once with 503 + Retry-After instead of
 * queueing on a store that is already the bottleneck. For fallback paths: while a read model is
 * away, every read lands on the store's query engine, which (FerretDB above all) cannot carry the
 * whole read load — unbounded, the queue grows until clients wait out the gateway's timeout
 * (504) and the store starves the writes too.
 *
 * An admitted call that has not returned within `deadlineMs` gets a 503 as well, so that a slow
 * query on a saturated store reaches the client as a retryable 503 before the gateway's timeout
 * turns it into a 504; the call keeps its place until it really ends, so the store never has
 * more than `max` of them.
 */
export class LoadShedder {
  private running = 0;

  constructor(
    readonly max: number,
    private readonly what: string,
    private readonly deadlineMs = 5000,
  ) {}

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) throw this.busy();
    this.running += 1;
    const work = call().finally(() => (this.running -= 1));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.busy()), this.deadlineMs);
    });
    work.catch(() => undefined); // refused at the deadline already: its late failure is nobody's
    try {
      return await Promise.race([work, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private busy(): AppError {
    return new AppError('SERVICE_UNAVAILABLE', `${this.what} is busy. Retry shortly.`, {
      headers: { 'Retry-After': '1' },
    });
  }
}
