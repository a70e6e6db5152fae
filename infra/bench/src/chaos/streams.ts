import { SignalClient } from '@signal/sdk';

/**
 * Live-stream clients through the gateways for the whole chaos run: the SDK's iterator, which
 * reconnects with back-off and resumes with Last-Event-ID whenever a gateway or a signals
 * replica is killed or a dependency is cut. Each records every signal event it is handed, so the
 * end checks can hold them to "every event exactly once".
 */
export class StreamClients {
  /** Per client: `event|signal id` → times handed out. */
  readonly seen: Array<Map<string, number>> = [];
  /** Per client: connections opened (the first, then one per reconnect). */
  readonly connections: number[] = [];
  readonly resets: number[] = [];
  readonly errors: string[] = [];
  private readonly abort = new AbortController();
  private readonly running: Array<Promise<void>> = [];
  private readonly streams: Array<{ connections: number }> = [];

  constructor(
    private readonly gatewayUrl: string,
    private readonly apiKey: string,
    private readonly count: number,
  ) {}

  start(): void {
    for (let i = 0; i < this.count; i++) {
      const seen = new Map<string, number>();
      this.seen.push(seen);
      this.resets.push(0);
      const client = new SignalClient({ baseUrl: this.gatewayUrl, apiKey: this.apiKey, maxRetries: 20 });
      const stream = client.signals.stream(
        { events: ['signal.new', 'signal.winner', 'signal.dead', 'signal.rugged'] },
        // Killed processes and cut dependencies come back within seconds: reconnect soon.
        { signal: this.abort.signal, maxBackoffMs: 2000, idleTimeoutMs: 15_000 },
      );
      this.streams.push(stream);
      this.running.push(
        (async () => {
          for await (const e of stream) {
            if (e.event === 'reset') {
              this.resets[i]! += 1;
              continue;
            }
            const key = `${e.event}|${e.data.data.id}`;
            seen.set(key, (seen.get(key) ?? 0) + 1);
          }
        })().catch((err: unknown) => {
          this.errors.push(`stream ${i}: ${String(err)}`);
        }),
      );
    }
  }

  /** Whether every client holds every expected event. */
  hasAll(expected: readonly string[]): boolean {
    return this.seen.every((seen) => expected.every((k) => seen.has(k)));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.running);
    this.streams.forEach((s, i) => (this.connections[i] = s.connections));
  }
}
