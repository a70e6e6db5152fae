import type { Connection } from 'mongoose';
import type { HealthCheck } from './health';
import { pingMongo } from './mongo';

/** A broker client as readiness sees it (messaging's `AmqpClient`). */
export interface BrokerState {
  readonly connected: boolean;
  close(): Promise<void>;
}

/** A Redis read model's completeness mark (service-kit `RedisReadModel`). */
export interface CompletenessMark {
  isReady(): Promise<boolean>;
}

/** Readiness of what every service behind the broker has: its MongoDB store and the broker. */
export function storeAndBrokerChecks(
  mongo: Connection,
  broker: BrokerState,
): { mongo: HealthCheck; rabbitmq: HealthCheck } {
  return {
    mongo: () => pingMongo(mongo),
    rabbitmq: async () => {
      if (!broker.connected) throw new Error('down');
    },
  };
}

/** A read model kept in Redis (the timeline index, the stats aggregates): ready once complete. */
export function completeReadModelCheck(model: CompletenessMark): HealthCheck {
  return async () => {
    if (!(await model.isReady())) throw new Error('incomplete');
  };
}

/**
 * A service's connections in the order they close, after its workers stop (`registerShutdown`):
 * the broker first (nothing more is taken or published), then Redis, then the store.
 */
export function serviceConnections(parts: {
  amqp: BrokerState;
  redis?: { disconnect(): void };
  mongo: Connection;
}): Array<[string, () => Promise<void>]> {
  const { amqp, redis, mongo } = parts;
  const closing: Array<[string, () => Promise<void>]> = [['rabbitmq', () => amqp.close()]];
  if (redis) closing.push(['redis', async () => redis.disconnect()]);
  closing.push(['mongo', () => mongo.close()]);
  return closing;
}
