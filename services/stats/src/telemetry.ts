import { startTelemetry } from '@signal/telemetry';

/** Imported first by main: tracing has to hook modules before anything loads them. */
export const telemetry = startTelemetry('stats');
