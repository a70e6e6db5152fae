export * from './amqp-client';
export * from './consumer';
export * from './topology';
export * from './outbox-relay';
export * from './dead-letters';
export * from './delay-cascade';
