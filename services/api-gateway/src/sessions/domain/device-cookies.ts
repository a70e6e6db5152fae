import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * OWASP's device cookie: after a successful login the browser gets `<device id>.<signature>`, the
 * signature an HMAC of the id and the email it logged in as. Presented with a login for that
 * email, it proves the browser has logged in as it before, and the attempt is judged by that
 * device's own failures (domain/login-throttle.ts). Nothing is stored: a cookie for another
 * email, or a forged one, verifies to nothing and the attempt is an unknown browser's.
 */
export const DEVICE_COOKIE = '__Host-signal_device';
/** How long a browser stays known without logging in again. */
export const DEVICE_COOKIE_MAX_AGE_SECONDS = 180 * 24 * 3600;

const ID = /^[A-Za-z0-9_-]{22}$/;

export class DeviceCookies {
  constructor(private readonly secret: string) {}

  private sign(deviceId: string, email: string): string {
    return createHmac('sha256', this.secret)
      .update(`login-device:${deviceId}:${email.trim().toLowerCase()}`)
      .digest('base64url');
  }

  /** A cookie value for this browser and email: the same device id when it had one. */
  issue(email: string, deviceId = randomBytes(16).toString('base64url')): string {
    return `${deviceId}.${this.sign(deviceId, email)}`;
  }

  /** The device id the value proves for this email, or undefined. */
  deviceFor(value: string | undefined, email: string): string | undefined {
    if (!value) return undefined;
    const dot = value.indexOf('.');
    const deviceId = value.slice(0, dot);
    if (dot < 0 || !ID.test(deviceId)) return undefined;
    const expected = Buffer.from(this.sign(deviceId, email));
    const given = Buffer.from(value.slice(dot + 1));
    return given.length === expected.length && timingSafeEqual(given, expected) ? deviceId : undefined;
  }
}
