import { startTelemetry } from '@signal/telemetry';

/** Imported first by the api entry point: tracing has to hook modules before anything loads them. */
export const telemetry = startTelemetry('webhooks-api');
