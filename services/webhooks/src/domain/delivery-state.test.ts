import type { DeliveryHeader, DeliveryLogEntry } from './records';
import {
  attemptSeq,
  deliveryIdBound,
  deliveryIdFor,
  foldDelivery,
  logEntryId,
  requeueSeq,
} from './delivery-state';

const created = new Date('2026-01-01T00:00:00Z');
const doc: DeliveryHeader = {
  _id: 'dlv_1',
  account_id: 'acc',
  webhook_id: 'wh_1',
  event_id: 'evt_1',
  event: 'signal.new',
  status: 'pending',
  created_at: created,
};
const at = (s: number) => new Date(created.getTime() + s * 1000);

function attempt(
  k: number,
  status: DeliveryLogEntry['status'],
  code: number | null,
  s: number,
): DeliveryLogEntry {
  return {
    _id: logEntryId('dlv_1', attemptSeq(k)),
    delivery_id: 'dlv_1',
    webhook_id: 'wh_1',
    seq: attemptSeq(k),
    kind: 'attempt',
    attempt: k,
    status,
    next_attempt_at: status === 'pending' ? at(s + 10) : null,
    at: at(s),
    started_at: at(s),
    duration_ms: 5,
    status_code: code,
    error: code === 200 ? null : `http_${code}`,
  };
}

/** The entry a re-send (retry now, recover) appends for attempt k at second s. */
function requeued(k: number, s: number): DeliveryLogEntry {
  return {
    ...attempt(k, 'pending', null, s),
    _id: logEntryId('dlv_1', requeueSeq(k)),
    seq: requeueSeq(k),
    kind: 'requeued',
    next_attempt_at: at(s),
    started_at: null,
    duration_ms: null,
    error: null,
  };
}

describe('delivery state folded from its log', () => {
  it('when nothing was attempted yet, then the delivery is pending and due at creation', () => {
    expect(foldDelivery(doc, [])).toMatchObject({
      status: 'pending',
      attempts_made: 0,
      next_attempt_at: created,
      updated_at: created,
      last_attempt: 0,
    });
  });

  it('when entries arrive out of order, then the one furthest in the log decides', () => {
    const s = foldDelivery(doc, [attempt(2, 'succeeded', 200, 20), attempt(1, 'pending', 500, 0)]);
    expect(s).toMatchObject({
      status: 'succeeded',
      attempts_made: 2,
      next_attempt_at: null,
      updated_at: at(20),
    });
    expect(s.attempts.map((a) => [a.attempt, a.status_code])).toEqual([
      [1, 500],
      [2, 200],
    ]);
  });

  it('when a failed delivery is re-sent, then it is pending again and the re-send sits before its attempt', () => {
    const requeue = requeued(2, 30);
    const failed = attempt(1, 'failed', 500, 0);
    expect(foldDelivery(doc, [requeue, failed])).toMatchObject({
      status: 'pending',
      attempts_made: 1,
      last_attempt: 1,
    });
    expect(foldDelivery(doc, [requeue, failed, attempt(2, 'succeeded', 200, 31)]).status).toBe('succeeded');
    expect(requeueSeq(2)).toBeGreaterThan(attemptSeq(1));
    expect(requeueSeq(2)).toBeLessThan(attemptSeq(2));
  });

  it('when an attempt was dropped while the webhook was off and a retry came after, then the attempts shown count 1, 2, 3 as attempts_made does', () => {
    const dropped: DeliveryLogEntry = {
      ...attempt(3, 'failed', null, 150),
      kind: 'dropped',
      started_at: null,
      duration_ms: null,
      error: null,
    };
    const requeue = requeued(4, 300);
    const s = foldDelivery(doc, [
      attempt(1, 'pending', 500, 0),
      attempt(2, 'pending', 500, 10),
      dropped,
      requeue,
      attempt(4, 'failed', 500, 301),
    ]);
    expect(s).toMatchObject({ status: 'failed', attempts_made: 3, last_attempt: 4 });
    expect(s.attempts.map((a) => [a.attempt, a.started_at])).toEqual([
      [1, at(0)],
      [2, at(10)],
      [3, at(301)],
    ]);
  });

  it('when a document holds the state written before the log, then the log continues from it', () => {
    const legacy: DeliveryHeader = {
      ...doc,
      status: 'pending',
      attempts_made: 1,
      attempts: [{ attempt: 1, started_at: at(0), duration_ms: 3, status_code: 500, error: 'http_500' }],
      next_attempt_at: at(10),
      updated_at: at(0),
    };
    expect(foldDelivery(legacy, [])).toMatchObject({
      status: 'pending',
      attempts_made: 1,
      next_attempt_at: at(10),
    });
    const s = foldDelivery(legacy, [attempt(2, 'succeeded', 200, 10)]);
    expect(s).toMatchObject({ status: 'succeeded', attempts_made: 2, last_attempt: 2 });
  });
});

describe('delivery ids derived from subscription and event', () => {
  it('when the same event reaches the same subscription twice, then the id is the same; otherwise it differs', () => {
    const t = Date.parse('2026-03-01T12:00:00Z');
    const a = deliveryIdFor('wh_A', 'evt_1', t);
    expect(a).toMatch(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(deliveryIdFor('wh_A', 'evt_1', t)).toBe(a);
    expect(deliveryIdFor('wh_B', 'evt_1', t)).not.toBe(a);
    expect(deliveryIdFor('wh_A', 'evt_2', t)).not.toBe(a);
  });

  it('when events are later, then their ids sort later (the time part is the event time)', () => {
    const early = deliveryIdFor('wh_A', 'evt_1', Date.parse('2026-03-01T12:00:00Z'));
    const late = deliveryIdFor('wh_A', 'evt_0', Date.parse('2026-03-01T12:00:01Z'));
    expect(early < late).toBe(true);
  });
});

describe('the retention bound', () => {
  it('when an event came before the bound, then its delivery, log entry and claim ids sort below it, and those of the bound’s millisecond or later do not', () => {
    const t = Date.parse('2026-03-01T12:00:00.000Z');
    const bound = deliveryIdBound(t);
    const id = (ms: number, n: number) => deliveryIdFor(`wh_${n}`, `evt_${n}`, ms);
    for (let n = 0; n < 50; n++) {
      for (const older of [id(t - 1, n), id(t - 86_400_000, n), id(0, n)]) {
        expect(older < bound).toBe(true);
        expect(logEntryId(older, 99) < bound).toBe(true);
      }
      for (const younger of [id(t, n), id(t + 1, n)]) {
        expect(younger > bound).toBe(true);
        expect(logEntryId(younger, 0) > bound).toBe(true);
      }
    }
  });
});
