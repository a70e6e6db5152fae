/**
 * The value of one cookie in a Cookie header, or undefined — for an empty one too: a cleared
 * cookie is no credential, and a request that carries no other is refused as having none.
 */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}
