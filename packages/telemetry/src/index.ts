import { AmqplibInstrumentation } from '@opentelemetry/instrumentation-amqplib';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { MongoDBInstrumentation } from '@opentelemetry/instrumentation-mongodb';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { NodeSDK } from '@opentelemetry/sdk-node';

/** Probes and scrapes are not part of any story; tracing them would only bury the real spans. */
const UNTRACED_PATHS = /^\/(healthz|readyz|metrics)(\?|$)/;

export interface Telemetry {
  /** Flushes and stops the exporter (last step of a graceful shutdown); a no-op when off. */
  shutdown(): Promise<void>;
}

/**
 * Starts OpenTelemetry tracing for one service when an OTLP endpoint is configured
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; the standard OTEL_*
 * variables tune it) and does nothing otherwise, so an untraced deployment loads none of it
 * and pays nothing on its hot paths. Must run before the instrumented modules (http, express,
 * undici, ioredis, mongodb, amqplib) are first required: each service's `main` imports its
 * `telemetry` module first.
 */
export function startTelemetry(serviceName: string, env: NodeJS.ProcessEnv = process.env): Telemetry {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_SDK_DISABLED === 'true') return { shutdown: async () => undefined };
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
