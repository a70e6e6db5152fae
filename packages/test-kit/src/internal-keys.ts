import { generateKeyPairSync } from 'node:crypto';

const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });

/**
 * The gateway's token-signing key pair for tests (made per test process): the env values
 * (base64 DER, as the run command writes them) and the private key to sign test tokens with.
 */
export const TEST_INTERNAL_KEYS = {
  /** INTERNAL_JWT_PRIVATE_KEY of a test gateway. */
  privateKey: pair.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
  /** INTERNAL_JWT_PUBLIC_KEY of every test service. */
  publicKey: pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
  signingKey: pair.privateKey,
};
