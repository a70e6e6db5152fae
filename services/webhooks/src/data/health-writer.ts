import type { Logger } from '@signal/service-kit';
import { addAttempt, healthDue, outcomeOf, type HealthBatch, type WrittenHealth } from '../domain/health';
import type { HealthRecorder } from '../domain/ports';
import type { AttemptRecord } from '../domain/records';

/**
 * Keeps subscriptions' health as attempts are recorded: attempts are folded in memory per
 * subscription and looked at every `flushMs`. A subscription's batch is written when its outcome
 * changed, else once `refreshMs` has passed since its last write (`healthDue`): a subscription's
 * health costs a write per change or per `refreshMs` however many attempts it gets, and reading
 * it costs nothing (it is in the subscription's document). Each worker judges by its own last
 * write: an outcome another worker wrote since is set right within `refreshMs`.
 */
export class HealthWriter implements HealthRecorder {
  private pending = new Map<string, HealthBatch>();
  /** What this process last wrote per subscription, while it still decides anything (< refreshMs). */
  private written = new Map<string, WrittenHealth>();
  private timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (webhookId: string, batch: HealthBatch) => Promise<void>,
    private readonly flushMs: number,
    private readonly refreshMs: number,
    private readonly logger: Logger,
  ) {}

  note(webhookId: string, attempt: AttemptRecord): void {
    this.pending.set(webhookId, addAttempt(this.pending.get(webhookId), attempt));
    this.arm();
  }

  /** Writes everything held, due or not (shutdown), and waits for it. */
  flush(): Promise<void> {
    return this.writeOut(() => true);
  }

  private arm(): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      const now = Date.now();
      for (const [id, w] of this.written) if (now - w.at >= this.refreshMs) this.written.delete(id);
      void this.writeOut((id, batch) => healthDue(batch, this.written.get(id), now, this.refreshMs)).then(
        () => {
          // Batches not due yet are looked at again next flush.
          if (this.pending.size > 0) this.arm();
        },
      );
    }, this.flushMs);
  }

  /** Writes the batches `due` picks (one subscription after another); the rest stay held. */
  private writeOut(due: (webhookId: string, batch: HealthBatch) => boolean): Promise<void> {
    const batches: Array<[string, HealthBatch]> = [];
    for (const [webhookId, batch] of this.pending)
      if (due(webhookId, batch)) {
        batches.push([webhookId, batch]);
        this.pending.delete(webhookId);
      }
    if (this.pending.size === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.writing = this.writing.then(async () => {
      for (const [webhookId, batch] of batches) {
        try {
          await this.write(webhookId, batch);
          this.written.set(webhookId, { at: Date.now(), outcome: outcomeOf(batch.last) });
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
