/**
 * What a failed fetch says of the network, for a person: fetch's own message is "fetch failed",
 * and the reason (a refused connection, a name that does not resolve) is a system error code in
 * its cause chain. A wrong base URL is the commonest first mistake, so the message names it.
 */
export function networkFailure(err: unknown, baseUrl: string): string {
  let reason: string | undefined;
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; depth += 1) {
    const code = 'code' in e ? e.code : undefined;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return `cannot reach ${baseUrl} (${code})`;
    // Without a code, the innermost cause's message: fetch refuses some ports itself ("bad port").
    const message = 'message' in e ? e.message : undefined;
    if (e !== err && typeof message === 'string' && message) reason = message;
    e = 'cause' in e ? e.cause : undefined;
  }
  return reason ? `cannot reach ${baseUrl} (${reason})` : String(err);
}
