export * from './enums';
export * from './errors';
export * from './signals';
export * from './stats';
export * from './events';
export * from './webhooks';
export * from './accounts';
export * from './dashboard';
