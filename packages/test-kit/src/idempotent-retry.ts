/** A response as a client reads it: its status and its JSON body. */
export interface ClientResponse {
  status: number;
  body: unknown;
}

/** Whether a response is the 409 telling a repeat that the first request is still at work. */
export function firstStillAtWork(res: ClientResponse): boolean {
  if (res.status !== 409 || typeof res.body !== 'object' || res.body === null) return false;
  const error: unknown = Reflect.get(res.body, 'error');
  if (typeof error !== 'object' || error === null) return false;
  const message: unknown = Reflect.get(error, 'message');
  return (
    Reflect.get(error, 'code') === 'CONFLICT' &&
    typeof message === 'string' &&
    message.includes('still being processed')
  );
}

/**
 * Sends a request with an Idempotency-Key as a client does: told the first request with the key
 * is still at work, it sends it again after a pause. A repeat waits for the first a moment only,
 * and on a loaded machine the first can take longer; what the tests check is the answer once the
 * first is over.
 */
export async function sendOnceOver<R extends ClientResponse>(
  send: () => PromiseLike<R>,
  tries = 50,
  pauseMs = 100,
): Promise<R> {
  for (let i = 1; ; i++) {
    const res = await send();
    if (!firstStillAtWork(res) || i >= tries) return res;
    await new Promise((r) => setTimeout(r, pauseMs));
  }
}
