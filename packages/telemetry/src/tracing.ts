import { AmqplibInstrumentation } from '@opentelemetry/instrumentation-amqplib';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { MongoDBInstrumentation } from '@opentelemetry/instrumentation-mongodb';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { Telemetry } from './telemetry';

/** Probes and scrapes serve no user's request; tracing them would only bury the real spans. */
const UNTRACED_PATHS = /^\/(healthz|readyz|metrics)(\?|$)/;

/**
 * The tracing SDK for one service, with the instrumentations of every module the services use
 * (index.ts requires this module only when an OTLP endpoint is configured).
 */
export function startTracing(serviceName: string, env: NodeJS.ProcessEnv): Telemetry {
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? serviceName,
    traceExporter: new OTLPTraceExporter(),
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.test(req.url ?? ''),
      }),
      new ExpressInstrumentation(),
      new UndiciInstrumentation(),
      new IORedisInstrumentation(),
      new MongoDBInstrumentation(),
      // Publish and consume spans, and the W3C headers on every message, come from here; the
      // outbox relay re-enters the context stored with each event before publishing it.
      new AmqplibInstrumentation(),
    ],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
