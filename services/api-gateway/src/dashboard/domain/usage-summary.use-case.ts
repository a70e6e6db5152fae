import { SESSION_USAGE_KEY, type UsageBucket } from '@signal/contracts';
import { fail, succeed, type Result } from '@signal/service-kit';
import type { AccountStore } from '../../accounts/domain/ports';
import type { Plan } from '../../accounts/domain/records';
import { dayWindowEnd, minuteWindowEnd } from '../../edge/domain/rate-limit';
import type { UsageLedger, UsageSeries } from '../../edge/domain/usage';

export interface UsageSummaryDeps {
  repository: Pick<AccountStore, 'findAccount' | 'findKey'>;
  usage: UsageLedger;
  /** The plan shown for an account that has none stored. */
  defaultPlan: Plan;
}

/** A plan window as the dashboard shows it: how much of it is used and left, and when it starts over. */
export interface WindowLeft {
  limit: number;
  used: number;
  remaining: number;
  resets_at: string;
}

export type UsageSummary = UsageSeries & {
  plan: Plan;
  /** One key's id, `dashboard` (the session's requests), or `account` (all of them). */
  subject: string;
  remaining: { minute: WindowLeft; day: WindowLeft };
};

/**
 * The usage of one source of the account's requests (a key, its dashboard sessions) or of the
 * whole account, beside what is left of the plan: what remains is always the account's, since
 * its keys and sessions share the plan's windows.
 */
export async function usageSummary(
  deps: UsageSummaryDeps,
  accountId: string,
  keyId: string | undefined,
  now = Date.now(),
): Promise<Result<UsageSummary, 'NOT_FOUND'>> {
  if (keyId && keyId !== SESSION_USAGE_KEY && !(await deps.repository.findKey(accountId, keyId)))
    return fail('NOT_FOUND', `API key ${keyId} was not found.`);
  const account = await deps.repository.findAccount(accountId);
  const plan = account?.plan ?? deps.defaultPlan;
  const [series, whole] = await Promise.all([
    deps.usage.series(accountId, keyId, now),
    keyId ? deps.usage.series(accountId, undefined, now) : undefined,
  ]);
  return succeed({
    plan,
    subject: keyId ?? 'account',
    ...series,
    remaining: remainingOf(plan, whole ?? series, now),
  });
}

/**
 * What is left of the plan in the current UTC minute and day: the requests the limiter let
 * through (everything but 401 and 429) in the account's current buckets.
 */
function remainingOf(plan: Plan, series: UsageSeries, now: number): UsageSummary['remaining'] {
  const window = (limit: number, bucket: UsageBucket | undefined, resetsAt: number): WindowLeft => {
    const used = bucket ? bucket.served + bucket.server_error : 0;
    return { limit, used, remaining: Math.max(0, limit - used), resets_at: new Date(resetsAt).toISOString() };
  };
  return {
    minute: window(plan.per_minute, series.minutes.at(-1), minuteWindowEnd(now)),
    day: window(plan.per_day, series.days.at(-1), dayWindowEnd(now)),
  };
}
