import path from 'node:path';
import express, { Router, type RequestHandler } from 'express';

/** Nothing but this origin, no inline script or style: the dashboard's pages are static files. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const ROOT = path.join(__dirname, '..', '..', 'dashboard');

/** /dashboard: one HTML page (hash routes), its compiled script and stylesheet. */
export function dashboardPages(guard: RequestHandler): Router {
  const router = Router();
  const csp: RequestHandler = (_req, res, next) => {
    res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Permissions-Policy', 'camera=(), microphone=(), geolocation=()');
    next();
  };
  router.get(['/dashboard', '/dashboard/'], guard, csp, (_req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(path.join(ROOT, 'public', 'index.html'));
  });
  const assets = { index: false, maxAge: 0, etag: true };
  router.use('/dashboard/assets', csp, express.static(path.join(ROOT, 'public'), assets));
  router.use('/dashboard/assets', csp, express.static(path.join(ROOT, 'dist'), assets));
  return router;
}
