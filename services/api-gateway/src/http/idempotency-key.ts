import { idempotencyKeySchema } from '@signal/contracts';
import { AppError } from '@signal/service-kit';
import type { Request } from 'express';

/** The request's Idempotency-Key header, checked; undefined when it has none. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const value = req.header('idempotency-key');
  if (value === undefined) return undefined;
  const parsed = idempotencyKeySchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const message = parsed.error.issues[0]?.message ?? 'invalid Idempotency-Key';
  throw new AppError('VALIDATION_ERROR', message, { details: [{ field: 'Idempotency-Key', message }] });
}
