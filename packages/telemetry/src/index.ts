import { createRequire } from 'node:module';
import type { Telemetry } from './telemetry';
import type { startTracing } from './tracing';

export type { Telemetry } from './telemetry';

const OFF: Telemetry = { shutdown: async () => undefined };

/** The OTEL_* variables that switch tracing on or off. */
export interface TracingSwitch {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
  OTEL_SDK_DISABLED?: string;
}

/** Is tracing on: an OTLP endpoint configured, and the SDK not disabled? */
export function tracingConfigured(env: TracingSwitch): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return Boolean(endpoint) && env.OTEL_SDK_DISABLED !== 'true';
}

/**
 * Starts OpenTelemetry tracing for one service when an OTLP endpoint is configured
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; the standard OTEL_*
 * variables tune it) and does nothing otherwise. Must run before the instrumented modules (http,
 * express, undici, ioredis, mongodb, amqplib) are first required: each service's `main` imports
 * its `telemetry` module first.
 *
 * The SDK and its instrumentations (`./tracing`) are required only when tracing is on: loading
 * them costs a good part of every service's start and their memory for the process's life,
 * untraced. A synchronous require, not `import()`: the hooks must be in place before `main`
 * continues to load the modules they instrument.
 */
export function startTelemetry(serviceName: string, env: NodeJS.ProcessEnv = process.env): Telemetry {
  if (!tracingConfigured(env)) return OFF;
  const tracing: { startTracing: typeof startTracing } = createRequire(__filename)('./tracing');
  return tracing.startTracing(serviceName, env);
}
