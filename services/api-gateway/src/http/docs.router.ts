import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import express, { Router, type RequestHandler } from 'express';
import type { Plan } from '../data/account.model';
import { buildOpenApiDocument } from '../openapi/document';
import { enrichDocument } from '../openapi/enrich';

/**
 * /docs: the Scalar API reference (try-it with your API key), served from node_modules —
 * no CDN, and a CSP that lets the page talk to this origin only.
 */
const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Signal Service API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
</head><body>
<noscript>The interactive reference needs JavaScript; the document itself is at <a href="/openapi.json">/openapi.json</a>
and the webhooks guide at <a href="/docs/receiving-webhooks">/docs/receiving-webhooks</a>.</noscript>
<div id="app"></div>
<script src="/docs/assets/standalone.js"></script>
<script src="/docs/init.js"></script>
</body></html>`;

const INIT = `Scalar.createApiReference('#app', {
  url: '/openapi.json',
  withDefaultFonts: false,
  hideClientButton: false,
  persistAuth: false,
  telemetry: false,
  showDeveloperTools: 'never',
  agent: { disabled: true },
  mcp: { disabled: true },
  authentication: { preferredSecurityScheme: 'apiKey' },
  defaultHttpClient: { targetKey: 'shell', clientKey: 'curl' },
  metaData: { title: 'Signal Service API reference' },
});`;

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The guide ships in docs/ at the repository root, or beside the gateway in its image. */
function loadGuide(): string | undefined {
  for (const candidate of [
    path.join(__dirname, '..', '..', 'docs', 'receiving-webhooks.md'),
    path.join(__dirname, '..', '..', '..', '..', 'docs', 'receiving-webhooks.md'),
  ]) {
    if (existsSync(candidate)) return readFileSync(candidate, 'utf8');
  }
  return undefined;
}

/**
 * Scalar's standalone bundle: copied into vendor/ in the image (the package itself is a build-time
 * dependency, 150 MB with its own), else straight from node_modules in development.
 */
function scalarBrowserDir(): string {
  const vendored = path.join(__dirname, '..', '..', 'vendor', 'scalar');
  if (existsSync(path.join(vendored, 'standalone.js'))) return vendored;
  return path.join(path.dirname(require.resolve('@scalar/api-reference')), 'browser');
}

export function docsRouter(guard: RequestHandler, plan: Plan, publicUrl?: string): Router {
  const router = Router();
  const guide = loadGuide();
  const document = enrichDocument(buildOpenApiDocument(publicUrl ?? '/', plan), guide);
  const html: RequestHandler = (_req, res, next) => {
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    next();
  };
  router.get('/openapi.json', guard, (_req, res) => {
    res.json(document);
  });
  router.get('/docs', guard, html, (_req, res) => {
    res.type('html').send(PAGE);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').setHeader('Cache-Control', 'no-cache').send(INIT);
  });
  router.get('/docs/receiving-webhooks', guard, html, (_req, res) => {
    // Plain and readable without JavaScript; the same text is in the reference's introduction.
    res
      .type('html')
      .send(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Receiving webhooks</title>` +
          `<meta name="viewport" content="width=device-width, initial-scale=1"></head><body>` +
          `<p><a href="/docs">API reference</a> · <a href="/docs/receiving-webhooks.md">Markdown</a></p>` +
          `<pre style="white-space:pre-wrap;font:14px/1.5 ui-monospace,monospace;max-width:60rem">${escapeHtml(guide ?? 'Guide not bundled.')}</pre></body></html>`,
      );
  });
  router.get('/docs/receiving-webhooks.md', guard, (_req, res) => {
    res.type('text/markdown').send(guide ?? '# Receiving webhooks\n\nGuide not bundled.');
  });
  router.use('/docs/assets', express.static(scalarBrowserDir(), { index: false, maxAge: '1h' }));
  return router;
}
