import { AppError } from './app-error';

/**
 * At most `max` calls at once; one more is refused at once with 503 + Retry-After instead of
 * queueing on a store that is already the bottleneck. For fallback paths: while a read model is
 * away, every read lands on the store's query engine, which (FerretDB above all) cannot carry the
 * whole read load — unbounded, the queue grew until clients waited out the gateway's timeout
 * (504) and the store starved the writes too.
 */
export class LoadShedder {
  private running = 0;

  constructor(
    readonly max: number,
    private readonly what: string,
  ) {}

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.running >= this.max)
      throw new AppError('SERVICE_UNAVAILABLE', `${this.what} is busy. Retry shortly.`, {
        headers: { 'Retry-After': '1' },
      });
    this.running += 1;
    try {
      return await call();
    } finally {
      this.running -= 1;
    }
  }
}
