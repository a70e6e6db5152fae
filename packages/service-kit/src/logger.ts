import pino, { type Logger } from 'pino';
import { currentRequestId } from './request-context';

export type { Logger };

/** Paths that may carry secrets; pino replaces their values before anything is written. */
const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'password',
  'secret',
  'key',
  'token',
  '*.password',
  '*.secret',
  '*.key',
  '*.apiKey',
  '*.authorization',
];

export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name: service,
    level,
    base: { service },
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin() {
      const requestId = currentRequestId();
      return requestId ? { request_id: requestId } : {};
    },
  });
}
