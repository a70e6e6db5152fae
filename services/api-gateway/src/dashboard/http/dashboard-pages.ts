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

/** The front end's package (packages/dashboard): its public/ files and compiled dist/. */
const ROOT = path.dirname(require.resolve('@signal/dashboard/package.json'));

/** /dashboard: one HTML page (hash routes), its compiled script and stylesheet; and /favicon.ico. */
/** `rateHeaders`: the address's rate-limit headers, counting nothing (`rateHeadersOnly`). */
export function dashboardPages(rateHeaders: RequestHandler): Router {
  const router = Router();
  const csp: RequestHandler = (_req, res, next) => {
    res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Permissions-Policy', 'camera=(), microphone=(), geolocation=()');
    next();
  };
  router.get(['/dashboard', '/dashboard/'], rateHeaders, csp, (_req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(path.join(ROOT, 'public', 'index.html'));
  });
  // Browsers ask for /favicon.ico on every page (the docs too): serve the dashboard's icon
  // rather than a 404 in every console.
  router.get('/favicon.ico', rateHeaders, (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.type('image/svg+xml').sendFile(path.join(ROOT, 'public', 'favicon.svg'));
  });
  const assets = { index: false, maxAge: 0, etag: true };
  router.use('/dashboard/assets', rateHeaders, csp, express.static(path.join(ROOT, 'public'), assets));
  router.use('/dashboard/assets', rateHeaders, csp, express.static(path.join(ROOT, 'dist'), assets));
  return router;
}
