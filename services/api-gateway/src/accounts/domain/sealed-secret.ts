import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM with a key derived (HKDF-SHA-256) from the server pepper, for a secret that must
 * be shown again (an API key returned again to an idempotent retry) but never stored in clear: a
 * database leak alone reveals nothing.
 */
export class SecretSealer {
  private readonly key: Buffer;

  constructor(pepper: string, purpose: string) {
    this.key = Buffer.from(hkdfSync('sha256', pepper, Buffer.alloc(0), purpose, 32));
  }

  seal(secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
  }

  /** The secret, or undefined when the text was not sealed with this key (or was altered). */
  open(text: string): string | undefined {
    const raw = Buffer.from(text, 'base64url');
    if (raw.length < 29) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}
