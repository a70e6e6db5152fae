import type { UsageBucket, UsageOutcome } from '@signal/contracts';

export function outcomeOf(status: number): UsageOutcome {
  if (status === 401) return 'unauthorized';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'server_error';
  return 'served';
}

export interface UsageSeries {
  minutes: UsageBucket[];
  days: UsageBucket[];
}

/** Port: per-key and per-account request counts by outcome (data/usage.store.ts). */
export interface UsageLedger {
  /** Counts one request; written off the request path. */
  count(accountId: string, keyId: string, outcome: UsageOutcome, now?: number): void;
  /** The last 60 minutes and 30 days for one key, or for the account when `keyId` is undefined. */
  series(accountId: string, keyId?: string, now?: number): Promise<UsageSeries>;
}
