import {
  KEY_EXPIRED_EVENT,
  KEY_REVOKED_EVENT,
  OVERFLOW_EVENT,
  RECONNECT_EVENT,
  SESSION_ENDED_EVENT,
  STREAM_CAUGHT_UP_EVENT,
  caughtUpEvent,
  sseComment,
  sseEvent,
} from './stream';
import { resetEvent } from './stream-reset';
import {
  comesAfter,
  compareEntryIds,
  isEntryId,
  matches,
  overflows,
  signalTypeOf,
  streamFilter,
} from './stream-rules';

/** The JSON of a frame's one data line. */
const dataOf = (frame: string): unknown => JSON.parse(/^data: (.*)$/m.exec(frame)![1]!);

describe('SSE frames', () => {
  it('when data holds line ends of any kind, then each line is a data line of its own', () => {
    expect(sseEvent({ event: 'x', data: 'a\nb\r\nc\rd' })).toBe(
      'event: x\ndata: a\ndata: b\ndata: c\ndata: d\n\n',
    );
  });

  it('when a comment is encoded, then it is a colon line and a blank line', () => {
    expect(sseComment('keep-alive')).toBe(': keep-alive\n\n');
  });

  it('when the stream ends itself (overflow, reconnect), then the event has no id, so the client keeps its last one', () => {
    for (const frame of [OVERFLOW_EVENT, RECONNECT_EVENT]) {
      expect(frame).not.toMatch(/^id:/m);
      expect(dataOf(frame)).toMatchObject({ message: expect.stringContaining('Last-Event-ID') });
    }
    expect(OVERFLOW_EVENT).toMatch(/^event: overflow\n/);
    expect(RECONNECT_EVENT).toMatch(/^event: reconnect\n/);
    expect(dataOf(RECONNECT_EVENT)).toMatchObject({ reason: 'shutdown' });
  });

  it('when a credential ends its stream, then the last event is an error with its code and no id', () => {
    expect(dataOf(KEY_REVOKED_EVENT)).toEqual({ code: 'UNAUTHORIZED', message: 'The API key was revoked.' });
    expect(dataOf(SESSION_ENDED_EVENT)).toEqual({
      code: 'UNAUTHORIZED',
      message: 'The session ended; log in again.',
    });
    expect(dataOf(KEY_EXPIRED_EVENT)).toEqual({
      code: 'KEY_EXPIRED',
      message: 'This API key has expired. Generate a new key in your dashboard under API settings.',
    });
    for (const frame of [KEY_REVOKED_EVENT, SESSION_ENDED_EVENT, KEY_EXPIRED_EVENT]) {
      expect(frame).toMatch(/^event: error\ndata: \{.*\}\n\n$/);
    }
  });

  it('when a reset is encoded, then it carries the id to resume from when there is one, and the list to re-sync from', () => {
    const withId = resetEvent('expired', '5-1');
    expect(withId).toMatch(/^id: 5-1\nevent: reset\ndata: /);
    expect(dataOf(withId)).toMatchObject({ reason: 'expired', resync: '/v1/signals' });
    expect(resetEvent('unknown', undefined)).toMatch(/^event: reset\n/);
  });

  it('when a catch-up ends, then its event names the last id it replayed', () => {
    expect(caughtUpEvent('7-0')).toBe(`event: ${STREAM_CAUGHT_UP_EVENT}\ndata: 7-0\n\n`);
  });
});

describe('the order of the log', () => {
  it.each(['1-0', '0-0', '1700000000000-12', '18446744073709551615-18446744073709551615'])(
    'when %s is checked, then it is an entry id',
    (id) => expect(isEntryId(id)).toBe(true),
  );

  it.each([
    '',
    '1',
    '1-',
    '-1',
    '01-0',
    '1-01',
    'abc-1',
    '1-0 ',
    '18446744073709551616-0',
    '1700000000000-0-0',
  ])('when "%s" is checked, then it is not an entry id', (id) => expect(isEntryId(id)).toBe(false));

  it('when ids are compared, then milliseconds order first, then the sequence, by value not by text', () => {
    expect(compareEntryIds('9-0', '10-0')).toBeLessThan(0);
    expect(compareEntryIds('10-2', '10-10')).toBeLessThan(0);
    expect(compareEntryIds('10-10', '10-10')).toBe(0);
    expect(compareEntryIds('11-0', '10-99')).toBeGreaterThan(0);
  });

  it('when two log ids are compared, then both parts order as numbers, not as text', () => {
    expect(comesAfter('1700000000010-0', '1700000000009-5')).toBe(true);
    expect(comesAfter('1700000000009-10', '1700000000009-9')).toBe(true);
    expect(comesAfter('1700000000009-9', '1700000000009-9')).toBe(false);
    expect(comesAfter('1700000000008-99', '1700000000009-0')).toBe(false);
    expect(comesAfter('18446744073709551615-1', '18446744073709551615-0')).toBe(true);
  });

  it('when an id is not a log id, then it counts as after, so it is never held back', () => {
    expect(comesAfter('evt_1', '1700000000009-0')).toBe(true);
    expect(comesAfter('1700000000009-0', 'evt_1')).toBe(true);
  });
});

describe('stream filters', () => {
  it('when a filter is built, then an event passes only if both its type and its name are taken', () => {
    const filter = streamFilter({ type: ['wallet'], events: ['signal.winner'] });
    expect(matches(filter, { type: 'wallet', event: 'signal.winner' })).toBe(true);
    expect(matches(filter, { type: 'new', event: 'signal.winner' })).toBe(false);
    expect(matches(filter, { type: 'wallet', event: 'signal.new' })).toBe(false);
    expect(matches(filter, { type: undefined, event: 'signal.winner' })).toBe(false);
    expect(matches(streamFilter({}), { type: 'premium', event: 'signal.rugged' })).toBe(true);
  });

  it('when a filter sets no types and no events, then it takes every event, one of no known type too', () => {
    expect(matches({}, { event: 'signal.new', type: 'new' })).toBe(true);
    expect(matches({}, { event: 'reset', type: undefined })).toBe(true);
  });

  it('when an event carries a signal, then its type is read from the payload; otherwise there is none', () => {
    expect(signalTypeOf(JSON.stringify({ data: { type: 'wallet' } }))).toBe('wallet');
    expect(signalTypeOf(JSON.stringify({ data: { type: 7 } }))).toBeUndefined();
    expect(signalTypeOf(JSON.stringify({ nothing: true }))).toBeUndefined();
    expect(signalTypeOf('not json')).toBeUndefined();
  });
});

describe('overflow', () => {
  it('when a client has left more than the bound unread, then it overflows; at the bound it does not', () => {
    expect(overflows(1025, 1024)).toBe(true);
    expect(overflows(1024, 1024)).toBe(false);
    expect(overflows(0, 1024)).toBe(false);
  });
});
