import { createPrivateKey } from 'node:crypto';
import { InternalTokenCache, signInternalToken } from '@signal/service-kit';

/**
 * What the gateway bench's stand-in proxies (express-gateway.ts, bare-proxy.ts) read from the
 * environment the bench starts them with. Kept apart from harness.ts, whose imports (autocannon,
 * amqplib) a proxy process measured for its CPU and memory has no use for.
 */

/** A variable the bench always sets; its absence is the bench's mistake, said at start-up. */
export function requiredEnv(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

/** Internal tokens signed with INTERNAL_JWT_PRIVATE_KEY (base64 PKCS#8 DER), cached as the gateway caches them. */
export function internalTokensFromEnv(): InternalTokenCache {
  const privateKey = createPrivateKey({
    key: Buffer.from(requiredEnv('INTERNAL_JWT_PRIVATE_KEY'), 'base64'),
    format: 'der',
    type: 'pkcs8',
  });
  return new InternalTokenCache((audience, accountId, ttl) =>
    signInternalToken(privateKey, audience, accountId, ttl),
  );
}
