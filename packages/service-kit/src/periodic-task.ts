import type { Logger } from './logger';

/**
 * A background task run every `intervalMs`, never twice at once, that can be asked to run now
 * (`runSoon`) and stops cleanly (waits for the run in hand). Errors are logged and the task runs
 * again at the next interval: background repair must outlive the outages it repairs.
 */
export class PeriodicTask {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly run: () => Promise<void>,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  runSoon(): void {
    if (this.stopped || this.running) return;
    clearTimeout(this.timer);
    this.schedule(0);
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.run()
        .catch((err: unknown) =>
          this.logger.warn(
            { task: this.name, err: err instanceof Error ? err.message : String(err) },
            'background task paused',
          ),
        )
        .finally(() => {
          this.running = undefined;
          this.schedule(this.intervalMs);
        });
    }, delay);
  }
}
