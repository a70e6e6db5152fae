import { brokerNames } from '@signal/messaging';
import { newId } from '@signal/service-kit';
import { infraUrls, signalSnapshotFixture } from '@signal/test-kit';
import { connect } from 'amqplib';

/** A signal as the signals service puts it on the bus. */
export const snapshot = (id: string) => signalSnapshotFixture(id);

/**
 * Publishes `count` signal.new events on the prefix's exchange, as the signals relay does
 * (persistent, confirmed), `perSecond` at most when given; the time each went out, by signal id.
 */
export async function publishEvents(
  prefix: string,
  count: number,
  perSecond?: number,
): Promise<Map<string, number>> {
  const conn = await connect(infraUrls().amqpUrl);
  const ch = await conn.createConfirmChannel();
  const exchange = brokerNames(prefix).signalEvents;
  await ch.assertExchange(exchange, 'topic', { durable: true });
  const sent = new Map<string, number>();
  const start = Date.now();
  for (let i = 0; i < count; i++) {
    if (perSecond !== undefined) {
      const due = start + (i * 1000) / perSecond;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    }
    const e = {
      id: newId('evt'),
      name: 'signal.new',
      occurred_at: new Date().toISOString(),
      signal: snapshot(newId('sig')),
    };
    sent.set(e.signal.id, Date.now());
    ch.publish(exchange, e.name, Buffer.from(JSON.stringify(e)), { messageId: e.id, persistent: true });
  }
  await ch.waitForConfirms();
  await conn.close();
  return sent;
}

/** Publishes one signal.new event that occurred at `occurredAt`, as the signals relay does; its event and signal ids. */
export async function publishEventAt(
  prefix: string,
  occurredAt: Date,
): Promise<{ eventId: string; signalId: string }> {
  const conn = await connect(infraUrls().amqpUrl);
  const ch = await conn.createConfirmChannel();
  const exchange = brokerNames(prefix).signalEvents;
  await ch.assertExchange(exchange, 'topic', { durable: true });
  const e = {
    id: newId('evt'),
    name: 'signal.new',
    occurred_at: occurredAt.toISOString(),
    signal: snapshot(newId('sig')),
  };
  ch.publish(exchange, e.name, Buffer.from(JSON.stringify(e)), { messageId: e.id, persistent: true });
  await ch.waitForConfirms();
  await conn.close();
  return { eventId: e.id, signalId: e.signal.id };
}
