import { brokerNames } from '@signal/messaging';
import { newId } from '@signal/service-kit';
import { infraUrls, signalSnapshotFixture } from '@signal/test-kit';
import { connect } from 'amqplib';

/** A signal as the signals service puts it on the bus. */
export const snapshot = (id: string) => signalSnapshotFixture(id);

/** A signal.new event as the signals relay publishes it. */
const signalNew = (occurredAt: Date) => ({
  id: newId('evt'),
  name: 'signal.new',
  occurred_at: occurredAt.toISOString(),
  signal: snapshot(newId('sig')),
});

/** Runs `publish` on a confirm channel to the prefix's signal exchange, then waits for every confirm. */
async function onSignalExchange<T>(
  prefix: string,
  publish: (send: (e: ReturnType<typeof signalNew>) => void) => Promise<T> | T,
): Promise<T> {
  const conn = await connect(infraUrls().amqpUrl);
  const ch = await conn.createConfirmChannel();
  const exchange = brokerNames(prefix).signalEvents;
  await ch.assertExchange(exchange, 'topic', { durable: true });
  const result = await publish((e) =>
    ch.publish(exchange, e.name, Buffer.from(JSON.stringify(e)), { messageId: e.id, persistent: true }),
  );
  await ch.waitForConfirms();
  await conn.close();
  return result;
}

/**
 * Publishes `count` signal.new events on the prefix's exchange, as the signals relay does
 * (persistent, confirmed), `perSecond` at most when given; the time each went out, by signal id.
 */
export function publishEvents(
  prefix: string,
  count: number,
  perSecond?: number,
): Promise<Map<string, number>> {
  return onSignalExchange(prefix, async (send) => {
    const sent = new Map<string, number>();
    const start = Date.now();
    for (let i = 0; i < count; i++) {
      if (perSecond !== undefined) {
        const due = start + (i * 1000) / perSecond;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      }
      const e = signalNew(new Date());
      sent.set(e.signal.id, Date.now());
      send(e);
    }
    return sent;
  });
}

/** Publishes one signal.new event that occurred at `occurredAt`, as the signals relay does; its event and signal ids. */
export function publishEventAt(
  prefix: string,
  occurredAt: Date,
): Promise<{ eventId: string; signalId: string }> {
  return onSignalExchange(prefix, (send) => {
    const e = signalNew(occurredAt);
    send(e);
    return { eventId: e.id, signalId: e.signal.id };
  });
}
