export * from './infra';
export * from './receiver';
