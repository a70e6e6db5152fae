import { fail, succeed, type Failure, type Result } from '@signal/service-kit';
import type { AccountStore } from '../../accounts/domain/ports';
import { planCaps, type PlanCaps } from '../../accounts/domain/plan-caps';
import { rateView, retryAfterSeconds, type RateView, type SharedLimiter } from '../../edge/domain/rate-limit';

export interface SessionApiRequestDeps {
  repository: Pick<AccountStore, 'findAccount'>;
  limiter: Pick<SharedLimiter, 'count'>;
  /** The caps of a plan that sets none of its own. */
  capDefaults: PlanCaps;
}

/** A request that may go on: the plan's windows as the headers show them, and its caps. */
export interface AdmittedSessionRequest {
  rate: RateView;
  caps: PlanCaps;
}

export type SessionApiRequestResult =
  | Result<AdmittedSessionRequest, 'UNAUTHORIZED' | 'SERVICE_UNAVAILABLE'>
  | (Failure<'RATE_LIMIT_EXCEEDED'> & { rate: RateView });

/**
 * A public route reached with a dashboard session is the account's API use like a key's: it
 * counts in the account's plan windows, the same shared windows as its keys, so a session cannot
 * lift the plan's limit.
 */
export async function admitSessionApiRequest(
  deps: SessionApiRequestDeps,
  accountId: string,
): Promise<SessionApiRequestResult> {
  const account = await deps.repository.findAccount(accountId);
  if (!account) return fail('UNAUTHORIZED', 'This account no longer exists.');
  let decision;
  try {
    decision = await deps.limiter.count({
      subject: accountId,
      perMinute: account.plan.per_minute,
      perDay: account.plan.per_day,
    });
  } catch (cause) {
    // No shared window to count in: refuse for a moment rather than serve unlimited.
    return fail('SERVICE_UNAVAILABLE', undefined, { retryAfter: 1, cause });
  }
  const rate = rateView(decision.minute, decision.day);
  if (decision.outcome === 'limited')
    return {
      ...fail('RATE_LIMIT_EXCEEDED', undefined, {
        retryAfter: retryAfterSeconds(decision.minute, decision.day),
      }),
      rate,
    };
  return succeed({ rate, caps: planCaps(account.plan, deps.capDefaults) });
}
