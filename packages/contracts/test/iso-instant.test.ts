import { parseIsoInstant, signalListQuerySchema } from '../src';

const at = (iso: string) => Date.parse(iso);

describe('ISO 8601 instants (the since parameter)', () => {
  it.each([
    ['2026-11-24', '2026-11-24T00:00:00.000Z'],
    ['20261124', '2026-11-24T00:00:00.000Z'],
    ['2026-11-24T06:00:00Z', '2026-11-24T06:00:00.000Z'],
    ['2026-11-24T06:00Z', '2026-11-24T06:00:00.000Z'],
    ['2026-11-24t06:00:00z', '2026-11-24T06:00:00.000Z'],
    ['20261124T060000Z', '2026-11-24T06:00:00.000Z'],
    ['2026-11-24T06:00:00+0000', '2026-11-24T06:00:00.000Z'],
    ['2026-11-24T08:00:00+02:00', '2026-11-24T06:00:00.000Z'],
    ['2026-11-24T01:00:00-05', '2026-11-24T06:00:00.000Z'],
    ['2026-11-24T06:00:00.123456Z', '2026-11-24T06:00:00.123Z'],
    ['2026-11-24T06:00:00,5Z', '2026-11-24T06:00:00.500Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
  ])('when since is %s, then it means %s', (text, iso) => {
    expect(parseIsoInstant(text)).toBe(at(iso));
    expect(signalListQuerySchema.parse({ since: text })).toEqual({ since: iso });
  });

  it('when the year is below 100, then it is that year, not 19xx', () => {
    expect(new Date(parseIsoInstant('0042-01-01')!).getUTCFullYear()).toBe(42);
  });

  it.each([
    'yesterday',
    '2026-11-24T06:00:00', // no zone: local time somewhere unknown
    '2026-11-24T06Z', // hours alone
    '2026-02-30',
    '2026-13-01',
    '2026-11-24T24:00:00Z',
    '2026-11-24T06:60:00Z',
    '2026-11-24T06:00:00+24:00',
    '2026-1124', // basic and extended mixed
    '2026-11-24T0600:00Z',
    '2026-11-24 06:00:00Z',
    '',
  ])('when since is %j, then it is refused with a message naming the parameter', (text) => {
    expect(parseIsoInstant(text)).toBeUndefined();
    const r = signalListQuerySchema.safeParse({ since: text });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toMatch(/^since must be an ISO 8601 date or timestamp/);
  });
  it.each([
    ['2026-11-24T08:00:00 02:00', '2026-11-24T06:00:00.000Z'],
    ['2026-11-24T08:00:00 0200', '2026-11-24T06:00:00.000Z'],
    ['2026-11-24T08:00 02', '2026-11-24T06:00:00.000Z'],
  ])(
    'when since is %j (a "+" sent unencoded in a query arrives as a space), then it is that offset',
    (text, iso) => {
      expect(signalListQuerySchema.parse({ since: text }).since).toBe(iso);
    },
  );
});

describe('whole-number parameters (limit, page)', () => {
  it.each([
    ['99999999999999999999', 'limit must be between 1 and 100'],
    ['101', 'limit must be between 1 and 100'],
    ['-1', 'limit must be between 1 and 100'],
    ['1.5', 'limit must be a whole number'],
    ['abc', 'limit must be a whole number'],
  ])('when limit is %j, then it is refused with the one message %j', (text, message) => {
    const r = signalListQuerySchema.safeParse({ limit: text });
    expect(r.error?.issues.map((i) => i.message)).toEqual([message]);
  });
});
