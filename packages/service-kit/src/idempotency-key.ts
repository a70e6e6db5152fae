import { idempotencyKeySchema } from '@signal/contracts';
import type { Request } from 'express';
import { AppError } from './app-error';

/** The request's Idempotency-Key header, checked (400 when malformed); undefined when absent. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const value = req.header('idempotency-key');
  if (value === undefined) return undefined;
  const parsed = idempotencyKeySchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const message = parsed.error.issues[0]?.message ?? 'invalid Idempotency-Key';
  throw new AppError('VALIDATION_ERROR', message, { details: [{ field: 'Idempotency-Key', message }] });
}
