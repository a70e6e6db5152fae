import { signalIdSchema } from '@signal/contracts';
import { AppError } from '@signal/service-kit';

/** Opaque to clients; inside it is the id of the last signal of the previous page. */
export function encodeCursor(lastId: string): string {
  return Buffer.from(lastId, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!signalIdSchema.safeParse(id).success) {
    throw new AppError('VALIDATION_ERROR', 'cursor must be a value returned in meta.next_cursor', {
      details: [{ field: 'cursor', message: 'not a cursor returned by this API' }],
    });
  }
  return id;
}
