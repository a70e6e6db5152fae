import { SIGNAL_EVENT_VERSION, type SignalEvent, type SignalType } from '@signal/contracts';
import { brokerNames } from '@signal/messaging';
import { newId } from '@signal/service-kit';
import { infraUrls, signalSnapshotFixture } from '@signal/test-kit';
import { connect, type ChannelModel, type ConfirmChannel } from 'amqplib';

/**
 * A producer on a broker prefix's event exchange: publishes bus events as the signals outbox
 * does, so a test feeds the live stream without the ingest path.
 */
export async function busProducer(prefix: string) {
  const conn: ChannelModel = await connect(infraUrls().amqpUrl);
  const ch: ConfirmChannel = await conn.createConfirmChannel();
  const exchange = brokerNames(prefix).signalEvents;
  await ch.assertExchange(exchange, 'topic', { durable: true });
  /** In order, confirmed together. */
  const publishAll = async (events: SignalEvent[]) => {
    for (const event of events)
      ch.publish(exchange, event.name, Buffer.from(JSON.stringify(event)), {
        messageId: event.id,
        persistent: true,
      });
    await ch.waitForConfirms();
  };
  return {
    publish: (event: SignalEvent) => publishAll([event]),
    publishAll,
    close: () => conn.close(),
  };
}

/** A bus event about a new fixture signal (or `signalId`'s), of `type` if given. */
export function busEvent(
  name: SignalEvent['name'],
  over: { tokenName?: string; signalId?: string; type?: SignalType } = {},
): SignalEvent {
  const signal = signalSnapshotFixture(over.signalId ?? newId('sig'));
  if (over.type) signal.type = over.type;
  if (over.tokenName) signal.token.name = over.tokenName;
  return {
    schema_version: SIGNAL_EVENT_VERSION,
    id: newId('evt'),
    name,
    occurred_at: new Date().toISOString(),
    signal,
  };
}
