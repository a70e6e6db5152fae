import { isWebhookEvent, payloadFor, type SignalEventRead } from '@signal/contracts';
import { Batcher } from '@signal/service-kit';
import type { AppendOutcome, LogEntry } from './live-stream';

export type NewLogEntry = Omit<LogEntry, 'id'>;

/**
 * A bus event as the live stream carries it, or undefined for one it does not (`signal.updated`,
 * a name from a newer producer): the webhook payload, so a stream event and a webhook delivery of
 * the same event have the same body.
 */
export function logEntryFor(event: SignalEventRead): NewLogEntry | undefined {
  if (!isWebhookEvent(event)) return undefined;
  return {
    event: event.name,
    eventId: event.id,
    type: event.signal.type,
    data: JSON.stringify(payloadFor(event)),
  };
}

/**
 * Feeds the live stream's log from the bus: each bus event becomes one log entry, appended once
 * (the log dedupes by the bus event's id). Appends go by the batch, one batch at a time, so the
 * log keeps the order this replica took the messages in, and a burst costs a few round trips. A
 * failed append fails its message, which the consumer retries (without counting while Redis is
 * unreachable).
 */
export class StreamFeeder {
  private readonly batcher: Batcher<NewLogEntry, AppendOutcome>;

  constructor(append: (entries: NewLogEntry[]) => Promise<AppendOutcome[]>) {
    this.batcher = new Batcher({ run: append, maxItems: 200, windowMs: 1, maxConcurrent: 1 });
  }

  async feed(event: SignalEventRead): Promise<void> {
    const entry = logEntryFor(event);
    if (!entry) return;
    const [outcome] = await this.batcher.add([entry]);
    if (outcome && !outcome.ok)
      throw outcome.error instanceof Error ? outcome.error : new Error(String(outcome.error));
  }

  flush(): Promise<void> {
    return this.batcher.flush();
  }
}
