import { matches, signalStreamQuerySchema, streamFilter } from '@signal/contracts';
import { parseOrThrow } from '@signal/service-kit';
import { entryEvent, logEntryFields, notHeldReason, parseLogEntry, type LogEntry } from './live-stream';

const entry = (over: Partial<LogEntry> = {}): LogEntry => ({
  id: '1700000000000-0',
  event: 'signal.new',
  eventId: 'evt_1',
  type: 'wallet',
  data: '{"event":"signal.new"}',
  ...over,
});

describe('SSE encoding', () => {
  it('when a log entry is encoded, then it is id, event and data lines ended by a blank line', () => {
    expect(entryEvent(entry())).toBe(
      'id: 1700000000000-0\nevent: signal.new\ndata: {"event":"signal.new"}\n\n',
    );
  });
});

describe('log entries', () => {
  it('when an entry is written and read back, then it is the same entry', () => {
    const e = entry({ event: 'signal.rugged', type: '3d' });
    const { id, ...fields } = e;
    expect(parseLogEntry(id, logEntryFields(fields))).toEqual(e);
  });

  it.each([
    ['an unknown event name', ['event', 'signal.deleted', 'event_id', 'evt_1', 'type', 'new', 'data', '{}']],
    ['an unknown type', ['event', 'signal.new', 'event_id', 'evt_1', 'type', 'weekly', 'data', '{}']],
    ['no data', ['event', 'signal.new', 'event_id', 'evt_1', 'type', 'new']],
  ])('when an entry has %s, then it is not one the stream sends', (_, fields) => {
    expect(parseLogEntry('1-0', fields)).toBeUndefined();
  });

  it('when an id the log does not hold is older than its first entry, then it expired; when later, it is unknown', () => {
    const log = { first: '2000-0', now: 10_000, retentionMs: 5000 };
    expect(notHeldReason('1999-5', log)).toBe('expired');
    expect(notHeldReason('2000-1', log)).toBe('unknown');
  });

  it('when the log is empty, then an id older than the retention expired and a later one is unknown', () => {
    const log = { first: undefined, now: 10_000, retentionMs: 5000 };
    expect(notHeldReason('4999-0', log)).toBe('expired');
    expect(notHeldReason('5001-0', log)).toBe('unknown');
  });
});

describe('stream filters', () => {
  const parse = (query: Record<string, unknown>) => parseOrThrow(signalStreamQuerySchema, query, 'query');

  it('when type and events are comma lists, then each is parsed, trimmed and deduplicated', () => {
    expect(parse({ type: 'wallet, new,wallet', events: 'signal.new,signal.dead' })).toEqual({
      type: ['wallet', 'new'],
      events: ['signal.new', 'signal.dead'],
    });
  });

  it.each([
    [{ type: 'wallet,weekly' }, 'type: "weekly" is not one of new, 3d, 7d, 30d, wallet, premium'],
    [
      { events: 'signal.updated' },
      'events: "signal.updated" is not one of signal.new, signal.winner, signal.dead, signal.rugged',
    ],
    [{ type: 'new,,3d' }, 'type must be a comma-separated list of signal types'],
    [{ events: '' }, 'events must be a comma-separated list of event names'],
    [{ status: 'winner' }, 'unknown parameter: status'],
    [{ type: ['new', '3d'] }, 'type must be given once'],
  ])('when the query is %j, then it is a validation error saying so', (query, message) => {
    expect(() => parse(query)).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR', message }));
  });

  it('when a filter is built, then an entry passes only if both its type and its event are taken', () => {
    const filter = streamFilter(parse({ type: 'wallet', events: 'signal.winner' }));
    expect(matches(filter, entry({ type: 'wallet', event: 'signal.winner' }))).toBe(true);
    expect(matches(filter, entry({ type: 'new', event: 'signal.winner' }))).toBe(false);
    expect(matches(filter, entry({ type: 'wallet', event: 'signal.new' }))).toBe(false);
    expect(matches(streamFilter(parse({})), entry({ type: 'premium', event: 'signal.rugged' }))).toBe(true);
  });
});
