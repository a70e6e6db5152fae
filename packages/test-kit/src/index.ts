export * from './infra';
export * from './receiver';
export * from './tcp-proxy';
export * from './internal-keys';
export * from './fixtures';
export * from './rate-windows';
export * from './hostile-receiver';
export * from './fake-clock';
