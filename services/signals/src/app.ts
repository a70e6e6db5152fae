import type { SignalsConfig } from './config';
import { healthChecks, servesWith, type SignalsDependencies } from './dependencies';
import {
  readinessTiming,
  serviceApp,
  type Lifecycle,
  type Logger,
  type ServiceAppParts,
} from '@signal/service-kit';
import type { KeyObject } from 'node:crypto';
import type { Express } from 'express';
import type { ListDeps } from './domain/list-signals.use-case';
import type { StreamDeps } from './domain/open-stream.use-case';
import type { SignalSource, SignalWriteStore, WriteEffects } from './domain/ports';
import { ingestRouter } from './http/ingest.router';
import { signalsRouter } from './http/signals.router';

export interface SignalsAppDeps extends ServiceAppParts {
  repository: SignalWriteStore & SignalSource;
  reads: ListDeps;
  effects: WriteEffects;
  streams: StreamDeps;
  /** Checks the gateway's tokens (cannot make any). */
  internalJwtKey: KeyObject;
  ingestToken: string;
}

export function buildApp(deps: SignalsAppDeps): Express {
  return serviceApp(
    { service: 'signals', ...deps, jsonLimitBytes: 5 * 1024 * 1024 },
    signalsRouter(deps.reads, deps.internalJwtKey, deps.streams),
    ingestRouter(deps.repository, deps.effects, deps.ingestToken),
  );
}

/** The app as main.ts and the tests run it: everything from config and the built dependencies. */
export function appFromDependencies(
  config: SignalsConfig,
  deps: SignalsDependencies,
  logger: Logger,
  lifecycle: Lifecycle,
): Express {
  return buildApp({
    logger,
    lifecycle,
    checks: healthChecks(deps),
    servesWith,
    readiness: readinessTiming(config),
    repository: deps.repository,
    internalJwtKey: config.INTERNAL_JWT_PUBLIC_KEY,
    ingestToken: config.INGEST_TOKEN,
    reads: deps.reads,
    effects: deps.effects,
    streams: deps.streams,
  });
}
