import { signalIdSchema } from '@signal/contracts';
import { fail, succeed, type Result } from '@signal/service-kit';

/** Opaque to clients; inside it is the id of the last signal of the previous page. */
export function encodeCursor(lastId: string): string {
  return Buffer.from(lastId, 'utf8').toString('base64url');
}

const CURSOR_REFUSED = 'cursor must be a value returned in meta.next_cursor';

/** The signal id inside a cursor, or a VALIDATION_ERROR when it is not one this API made. */
export function decodeCursor(cursor: string): Result<string, 'VALIDATION_ERROR'> {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  // A ULID's first character is 0–7 (48 bits of time): one past it was never made here, and its
  // time would read as past every signal's.
  if (!signalIdSchema.safeParse(id).success || id.charAt(4) > '7') {
    return fail('VALIDATION_ERROR', CURSOR_REFUSED, {
      details: [{ field: 'cursor', message: CURSOR_REFUSED }],
    });
  }
  return succeed(id);
}
