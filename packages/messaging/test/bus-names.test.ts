import { buildAsyncApiDocument } from '@signal/contracts';
import { brokerNames } from '../src/topology';

/**
 * The bus document (packages/contracts/src/asyncapi.ts) names the broker's exchanges and queues;
 * this package declares them. The check lives here, the package that depends on contracts, so
 * that contracts' tests need nothing of messaging (test/import-graph.test.ts).
 */
describe('the bus document against the declared topology', () => {
  it('when built, then every exchange and queue it names is one the messaging package declares', () => {
    const names = brokerNames('');
    const doc = buildAsyncApiDocument() as { channels: Record<string, { address: string }> };
    const addresses = Object.values(doc.channels)
      .map((c) => c.address)
      .sort();
    expect(addresses).toEqual(
      [
        names.signalEvents,
        names.statsQueue,
        names.webhooksQueue,
        names.streamQueue,
        names.deliveriesQueue,
        names.deliveriesDueQueue,
        names.deliveryDelayLevel(0).replace(/0$/, '{level}'),
        names.deliveryLane(0).replace(/0$/, '{lane}'),
      ].sort(),
    );
  });
});
