import {
  addAttempt,
  healthDue,
  healthUpdates,
  healthView,
  hourKey,
  outcomeOf,
  type HealthBatch,
} from './health';
import type { AttemptRecord } from './records';

const attempt = (at: string, status: number | null): AttemptRecord => ({
  attempt: 1,
  started_at: new Date(at),
  duration_ms: 5,
  status_code: status,
  error: status !== null && status < 300 ? null : status === null ? 'timeout' : `http_${status}`,
});

const fold = (...attempts: AttemptRecord[]) =>
  attempts.reduce<HealthBatch | undefined>((b, a) => addAttempt(b, a), undefined)!;

describe('subscription health', () => {
  it('when failures come in any order, then the update keeps the latest attempt and the earliest failure (set only when none is held)', () => {
    const u = healthUpdates(
      fold(attempt('2026-01-01T10:00:02Z', 500), attempt('2026-01-01T10:00:01Z', null)),
    );
    expect(u.latest.update.$set).toMatchObject({
      'health.last_attempt_at': new Date('2026-01-01T10:00:02Z'),
      'health.last_succeeded': false,
      'health.last_status_code': 500,
    });
    expect(u.latest.update.$min).toEqual({ 'health.failing_since': new Date('2026-01-01T10:00:01Z') });
    expect(u.counts?.$inc).toEqual({ [`health.failures.${hourKey(new Date('2026-01-01T10:00:00Z'))}`]: 2 });
  });

  it('when the latest attempt succeeded, then failing_since is removed; when failures follow a success, then it is set to the first of them', () => {
    const ok = healthUpdates(
      fold(attempt('2026-01-01T10:00:01Z', 500), attempt('2026-01-01T10:00:02Z', 200)),
    );
    expect(ok.latest.update.$unset).toEqual({ 'health.failing_since': '' });
    const again = healthUpdates(
      fold(
        attempt('2026-01-01T10:00:01Z', 200),
        attempt('2026-01-01T10:00:03Z', 500),
        attempt('2026-01-01T10:00:02Z', 502),
      ),
    );
    expect(again.latest.update.$set).toMatchObject({
      'health.failing_since': new Date('2026-01-01T10:00:02Z'),
    });
  });

  it('when failures are read, then only the hours of the last 24 count', () => {
    const now = new Date('2026-01-02T12:30:00Z');
    const view = healthView(
      {
        last_attempt_at: now,
        last_succeeded: false,
        last_status_code: 500,
        last_error: 'http_500',
        failing_since: new Date('2026-01-01T00:00:00Z'),
        failures: {
          [hourKey(now)]: 3,
          [hourKey(new Date(now.getTime() - 23 * 3_600_000))]: 2,
          [hourKey(new Date(now.getTime() - 24 * 3_600_000))]: 100,
        },
      },
      now,
    );
    expect(view).toEqual({
      last_delivery_status: 'failed',
      last_delivery_at: now.toISOString(),
      last_response_status: 500,
      last_error: 'http_500',
      failing_since: '2026-01-01T00:00:00.000Z',
      failures_24h: 5,
    });
  });

  it('when the outcome is the one written, then the batch waits for the refresh; when it changed, or nothing was written, then it is due at once', () => {
    const failing = fold(attempt('2026-01-01T10:00:01Z', 500));
    const written = { at: 1_000, outcome: outcomeOf(attempt('2026-01-01T10:00:00Z', 500)) };
    expect(healthDue(failing, written, 1_500, 10_000)).toBe(false);
    expect(healthDue(failing, written, 11_000, 10_000)).toBe(true);
    expect(healthDue(failing, undefined, 1_500, 10_000)).toBe(true);
    // Another status code, a success, a timeout: each is news.
    expect(healthDue(fold(attempt('2026-01-01T10:00:01Z', 503)), written, 1_500, 10_000)).toBe(true);
    expect(healthDue(fold(attempt('2026-01-01T10:00:01Z', 200)), written, 1_500, 10_000)).toBe(true);
    expect(healthDue(fold(attempt('2026-01-01T10:00:01Z', null)), written, 1_500, 10_000)).toBe(true);
  });
});
