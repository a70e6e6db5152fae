import { z } from 'zod';
import {
  SIGNAL_EVENT_VERSION,
  signalEventReaderSchema,
  signalEventSchema,
  signalSnapshotReaderSchema,
  type SignalEvent,
} from '../src';

/** An event exactly as today's producer writes it. */
function todaysEvent(): SignalEvent {
  return {
    schema_version: SIGNAL_EVENT_VERSION,
    id: 'evt_01KAB3P0000000000000000000',
    name: 'signal.winner',
    occurred_at: '2026-11-22T10:00:00.000Z',
    signal: {
      id: 'sig_01KAB3P0000000000000000000',
      token: {
        symbol: 'PEPE',
        name: 'Pepe',
        contract: 'So1ana000000000000000000000pump',
        age_hours: 3,
        dex_paid: true,
        socials: { twitter: null, telegram: null, website: 'https://pepe.example' },
      },
      metrics: {
        mcap_entry: 100_000,
        mcap_current: 250_000,
        volume_24h: 5_000,
        holders: 120,
        liquidity: 20_000,
        mcap_ath: 300_000,
      },
      performance: { roi: 150, ath_roi: 200, status: 'winner', time_to_ath_hours: 2 },
      type: 'new',
      is_premium: false,
      created_at: '2026-11-22T08:00:00.000Z',
      updated_at: '2026-11-22T10:00:00.000Z',
      version: 3,
    },
    context: { request_id: 'req_abc', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
  };
}

/** The same event as a producer one version ahead might write it: fields added at every level. */
function nextVersionEvent(): Record<string, unknown> {
  const e = todaysEvent();
  return {
    ...e,
    schema_version: SIGNAL_EVENT_VERSION + 1,
    source: 'scanner-7',
    signal: {
      ...e.signal,
      chain: 'solana',
      token: {
        ...e.signal.token,
        decimals: 9,
        socials: { ...e.signal.token.socials, discord: 'https://discord.example' },
      },
      metrics: { ...e.signal.metrics, price_usd: 0.0001 },
      performance: { ...e.signal.performance, drawdown: -12 },
    },
    context: { ...e.context, baggage: 'tenant=a' },
  };
}

describe('event envelope versions', () => {
  it('when today\'s producer writes an event, then the writer schema (strict) accepts it and refuses any extra field', () => {
    expect(signalEventSchema.parse(todaysEvent())).toEqual(todaysEvent());
    expect(signalEventSchema.safeParse({ ...todaysEvent(), extra: 1 }).success).toBe(false);
    expect(signalEventSchema.safeParse({ ...todaysEvent(), schema_version: 2 }).success).toBe(false);
  });

  it('when a producer one version ahead adds fields at every level, then today\'s reader keeps what it knows and ignores the rest', () => {
    const read = signalEventReaderSchema.parse(nextVersionEvent());
    const today = todaysEvent();
    expect(read.schema_version).toBe(SIGNAL_EVENT_VERSION + 1);
    // Exactly today's fields, with today's values: nothing added leaks through.
    expect(read).toEqual({ ...today, schema_version: SIGNAL_EVENT_VERSION + 1 });
  });

  it('when an event predates the envelope version, then it reads as version 1', () => {
    const { schema_version: _omitted, ...older } = todaysEvent();
    expect(signalEventReaderSchema.parse(older).schema_version).toBe(1);
  });

  it('when a newer producer announces an event name this reader does not know, then it still reads (the consumer decides to skip it)', () => {
    const read = signalEventReaderSchema.parse({ ...nextVersionEvent(), name: 'signal.archived' });
    expect(read.name).toBe('signal.archived');
  });

  it('when the trace context is malformed, then the event still reads, without it', () => {
    const read = signalEventReaderSchema.parse({ ...todaysEvent(), context: { traceparent: 'nope' } });
    expect(read.context).toBeUndefined();
    expect(read.signal.id).toBe(todaysEvent().signal.id);
  });

  it('when a field the reader needs is missing, then the event is refused (poison, dead-lettered)', () => {
    const e = todaysEvent();
    const { roi: _dropped, ...performance } = e.signal.performance;
    expect(
      signalEventReaderSchema.safeParse({ ...e, signal: { ...e.signal, performance } }).success,
    ).toBe(false);
  });

  it('when a next-version consumer expects a new optional field, then today\'s events read there too', () => {
    const nextSnapshot = signalSnapshotReaderSchema.extend({
      metrics: signalSnapshotReaderSchema.shape.metrics.extend({ price_usd: z.number().optional() }),
      chain: z.string().default('solana'),
    });
    const nextReader = signalEventReaderSchema.extend({ signal: nextSnapshot, source: z.string().optional() });
    const read = nextReader.parse(todaysEvent());
    expect(read.signal.metrics.price_usd).toBeUndefined();
    expect(read.signal.chain).toBe('solana');
    expect(read.signal.metrics.mcap_current).toBe(250_000);
  });
});
