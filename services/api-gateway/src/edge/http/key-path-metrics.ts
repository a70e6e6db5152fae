import { metrics } from '@signal/service-kit';

const SERVICE = 'api-gateway';

/**
 * The key path's metrics, each label set looked up once and kept: the label lookup costs per
 * call, and the key path counts every request.
 */
export class KeyPathMetrics {
  /** By method, then route, then status: found without building a label key per request. */
  private readonly durations = new Map<
    string,
    Map<string, Map<number, { observe(seconds: number): void }>>
  >();
  private readonly decisions = new Map<string, { inc(): void }>();
  private readonly slowReaders = metrics.fairnessRefusals().labels('slow_reader');
  private readonly busyAccounts = metrics.fairnessRefusals().labels('account_in_flight');

  /** `http_request_duration_seconds` of a request that started at `started` (hrtime). */
  observe(method: string, route: string, status: number, started: bigint): void {
    let routes = this.durations.get(method);
    if (!routes) {
      routes = new Map();
      this.durations.set(method, routes);
    }
    let statuses = routes.get(route);
    if (!statuses) {
      statuses = new Map();
      routes.set(route, statuses);
    }
    let child = statuses.get(status);
    if (!child) {
      child = metrics.httpDuration().labels(SERVICE, method, route, String(status));
      statuses.set(status, child);
    }
    child.observe(Number(process.hrtime.bigint() - started) / 1e9);
  }

  /** `ratelimit_decisions_total`: what the limiter decided. */
  countDecision(decision: string): void {
    let child = this.decisions.get(decision);
    if (!child) {
      child = metrics.rateLimitDecisions().labels(decision);
      this.decisions.set(decision, child);
    }
    child.inc();
  }

  /** A client cut for not reading its response or its stream. */
  slowReader(): void {
    this.slowReaders.inc();
  }

  /** A request refused because its account had the most requests in flight. */
  busyAccount(): void {
    this.busyAccounts.inc();
  }
}
