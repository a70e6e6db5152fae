import { failureError, type AppError } from '@signal/service-kit';
import type { Session, SessionKind, SessionStore } from '../domain/sessions';

/**
 * The session a token stands for, or the error to throw: a refused token goes through `refuse`
 * (it counts against the client's address, like a bad key); a session store that does not
 * respond says nothing of the client, so that 503 does not count.
 */
export async function verifiedSession(
  sessions: Pick<SessionStore, 'verify'>,
  kind: SessionKind,
  token: string,
  refuse: (failure: AppError) => Promise<AppError>,
): Promise<Session> {
  const check = await sessions.verify(kind, token);
  if (check.ok) return check.value;
  throw check.code === 'SERVICE_UNAVAILABLE' ? failureError(check) : await refuse(failureError(check));
}
