import { comesAfter, signalTypeOf, wants } from './stream-filter';

describe('stream fan-out rules', () => {
  it('when a filter sets no types and no events, then it wants every event', () => {
    expect(wants({}, 'signal.new', 'new')).toBe(true);
    expect(wants({}, 'reset', undefined)).toBe(true);
  });

  it('when a filter names events and types, then an event must match both', () => {
    const filter = { events: new Set(['signal.winner']), types: new Set(['3d', '7d']) };
    expect(wants(filter, 'signal.winner', '3d')).toBe(true);
    expect(wants(filter, 'signal.new', '3d')).toBe(false);
    expect(wants(filter, 'signal.winner', 'new')).toBe(false);
    expect(wants(filter, 'signal.winner', undefined)).toBe(false);
  });

  it('when an event carries a signal, then its type is read from the payload; otherwise there is none', () => {
    expect(signalTypeOf(JSON.stringify({ data: { type: 'wallet' } }))).toBe('wallet');
    expect(signalTypeOf(JSON.stringify({ data: { type: 7 } }))).toBeUndefined();
    expect(signalTypeOf(JSON.stringify({ nothing: true }))).toBeUndefined();
    expect(signalTypeOf('not json')).toBeUndefined();
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
