import type { Request, Response } from 'express';
import { DEVICE_COOKIE, DEVICE_COOKIE_MAX_AGE_SECONDS } from '../domain/device-cookies';
import type { LoginClient } from '../domain/password-login.use-case';
import { readCookie } from '../../http/cookies';

/** Where a login comes from: the client's address and its device cookie. */
export function loginClientOf(req: Request): LoginClient {
  const deviceCookie = readCookie(req.header('cookie'), DEVICE_COOKIE);
  return { ip: req.ip ?? '', ...(deviceCookie ? { deviceCookie } : {}) };
}

/** The device cookie a successful login hands the browser (the session cookie's attributes). */
export function setDeviceCookie(res: Response, value: string): void {
  res.append(
    'Set-Cookie',
    `${DEVICE_COOKIE}=${value}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=${DEVICE_COOKIE_MAX_AGE_SECONDS}`,
  );
}
