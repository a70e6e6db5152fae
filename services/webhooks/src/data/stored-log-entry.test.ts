import type { DeliveryLogEntry } from '../domain/records';
import { fromStoredLogEntry, toStoredLogEntry } from './stored-log-entry';

const attempt: DeliveryLogEntry = {
  _id: 'dlv_1:2',
  delivery_id: 'dlv_1',
  webhook_id: 'wh_1',
  seq: 2,
  kind: 'attempt',
  attempt: 1,
  status: 'pending',
  next_attempt_at: new Date('2026-11-25T16:00:00Z'),
  at: new Date('2026-11-25T15:59:00Z'),
  started_at: new Date('2026-11-25T15:58:59Z'),
  duration_ms: 12,
  status_code: 500,
  error: 'http_500',
  trace_id: null,
  request: { url: 'https://example.com/hook', headers: { 'webhook-id': 'dlv_1' } },
  response: {
    status: 500,
    headers: [{ name: 'x-odd', value: 'a\u0000"b\ud800' }],
    body: 'down\u0000',
    body_encoding: 'text',
    body_truncated: false,
  },
};

describe('stored delivery log entry', () => {
  it('when an attempt is stored, then its request and response are one string the store can hold, and read back as they were', () => {
    const stored = toStoredLogEntry(attempt);
    expect(stored.request).toBeUndefined();
    expect(stored.response).toBeUndefined();
    // A string field with a NUL is what FerretDB on PostgreSQL refuses; JSON escapes it.
    expect(stored.exchange).not.toContain('\u0000');
    expect(stored.next_attempt_at).toEqual(attempt.next_attempt_at);
    expect(fromStoredLogEntry(stored)).toEqual(attempt);
  });

  it('when an attempt sent nothing (a refused address), then both are kept as null', () => {
    const stored = toStoredLogEntry({ ...attempt, request: null, response: null });
    expect(fromStoredLogEntry(stored)).toMatchObject({ request: null, response: null });
  });

  it('when an entry has no exchange (dropped, re-sent), then none is stored and none is read', () => {
    const { request: _request, response: _response, ...dropped } = attempt;
    const stored = toStoredLogEntry({ ...dropped, kind: 'dropped' });
    expect('exchange' in stored).toBe(false);
    expect(fromStoredLogEntry(stored)).toEqual({ ...dropped, kind: 'dropped' });
  });

  it('when an entry was stored with documents by an earlier release, then it is read as it is', () => {
    expect(fromStoredLogEntry(attempt)).toEqual(attempt);
  });

  it('when a stored exchange cannot be read, then the attempt is shown without it rather than failing the read', () => {
    const { request: _request, response: _response, ...rest } = attempt;
    expect(fromStoredLogEntry({ ...rest, exchange: '{"request":' })).toMatchObject({
      request: null,
      response: null,
    });
    expect(fromStoredLogEntry({ ...rest, exchange: '{"request":{"url":1}}' })).toMatchObject({
      request: null,
      response: null,
    });
  });
});
