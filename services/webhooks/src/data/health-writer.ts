import type { Logger } from '@signal/service-kit';
import { addAttempt, type HealthBatch } from '../domain/health';
import type { HealthRecorder } from '../domain/ports';
import type { AttemptRecord } from '../domain/records';

/**
 * Keeps subscriptions' health as attempts are recorded: attempts are folded in memory per
 * subscription and written every `flushMs` (one or two updates per subscription touched), so a
 * subscription's health costs a few writes a second however many attempts it gets, and reading
 * it costs nothing (it is in the subscription's document).
 */
export class HealthWriter implements HealthRecorder {
  private pending = new Map<string, HealthBatch>();
  private timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (webhookId: string, batch: HealthBatch) => Promise<void>,
    private readonly flushMs: number,
    private readonly logger: Logger,
  ) {}

  note(webhookId: string, attempt: AttemptRecord): void {
    this.pending.set(webhookId, addAttempt(this.pending.get(webhookId), attempt));
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.flushMs);
  }

  /** Writes what is held (one subscription after another) and waits for it. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batches = this.pending;
    this.pending = new Map();
    this.writing = this.writing.then(async () => {
      for (const [webhookId, batch] of batches) {
        try {
          await this.write(webhookId, batch);
        } catch (err) {
          // Health is a summary: a lost update is corrected by the next attempt's.
          this.logger.warn(
            { webhook: webhookId, err: err instanceof Error ? err.message : String(err) },
            'subscription health not written',
          );
        }
      }
    });
    return this.writing;
  }
}
