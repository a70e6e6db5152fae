// First: tracing hooks http, express, undici, ioredis, mongodb and amqplib as they load.
import { telemetry } from './telemetry';
import { runService } from '@signal/service-kit';
import { appFromDependencies } from './app';
import { loadConfig } from './config';
import { connections, createDependencies } from './dependencies';

/** One gateway process (alone, or one of a cluster's workers: main.ts). */
void runService({
  name: 'api-gateway',
  loadConfig,
  createDependencies,
  app: appFromDependencies,
  connections,
  telemetry,
});
