import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { buildOpenApiDocument } from '@signal/contracts';
import express, { Router, type RequestHandler } from 'express';
import MarkdownIt from 'markdown-it';
import type { Plan } from '../../accounts/domain/records';

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

/**
 * The guide as HTML: raw HTML in the Markdown stays text (the guide is ours, but a page that
 * renders Markdown should not run what it holds), links become links, and the typography of the
 * reference page (Scalar's default theme: its fonts, colours and code blocks) styles it.
 */
const markdown = new MarkdownIt({ html: false, linkify: true, typographer: false });

const GUIDE_STYLE = `
:root { color-scheme: light dark; --text: #2a2f45; --muted: #757575; --bg: #fff; --bg-2: #f6f6f6;
  --border: #e7e7e7; --accent: #0a85d1; }
@media (prefers-color-scheme: dark) { :root { --text: #e7e7e7; --muted: #a4a4a4; --bg: #0f0f0f;
  --bg-2: #1a1a1a; --border: #2d2d2d; --accent: #3ea6ff; } }
body { margin: 0; background: var(--bg); color: var(--text);
  font: 16px/1.6 Inter, system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; }
header { border-bottom: 1px solid var(--border); padding: 12px 24px; font-size: 14px; }
header a { margin-right: 16px; }
main { max-width: 760px; margin: 0 auto; padding: 24px; }
a { color: var(--accent); }
h1, h2, h3 { line-height: 1.25; margin: 1.6em 0 0.6em; }
h1 { font-size: 2rem; margin-top: 0.5em; }
code { font: 0.875em/1.5 'JetBrains Mono', ui-monospace, SFMono-Regular, Menlo, monospace;
  background: var(--bg-2); border-radius: 4px; padding: 0.1em 0.3em; }
pre { background: var(--bg-2); border: 1px solid var(--border); border-radius: 8px; padding: 12px 16px;
  overflow-x: auto; }
pre code { background: none; padding: 0; }
table { border-collapse: collapse; width: 100%; margin: 1em 0; font-size: 14px; display: block; overflow-x: auto; }
th, td { border: 1px solid var(--border); padding: 6px 10px; text-align: left; vertical-align: top; }
th { background: var(--bg-2); }
`;

const ROOT_STYLE =
  'body { margin: 0; color: #1f2328; background: #fff; font: 16px/1.6 system-ui, sans-serif; } ' +
  'main { max-width: 760px; margin: 0 auto; padding: 24px; } a { color: #0550ae; }';

/** `/` for a browser: where the dashboard and the reference are (an API client gets the JSON 404). */
const ROOT_PAGE =
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Signal Service</title>` +
  `<meta name="viewport" content="width=device-width, initial-scale=1"><style>${ROOT_STYLE}</style></head><body>` +
  `<main><h1>Signal Service</h1><p>This is the API's address: its routes are under <code>/v1</code>.</p><ul>` +
  `<li><a href="/dashboard">Dashboard</a>: sign up, API keys, usage, webhooks, signals</li>` +
  `<li><a href="/docs">API reference</a>: every route, with try-it (<a href="/openapi.json">OpenAPI 3.1</a>)</li>` +
  `</ul></main></body></html>`;

export function guidePage(guide: string | undefined): string {
  const body = markdown.render(guide ?? '# Receiving webhooks\n\nGuide not bundled.');
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Receiving webhooks · Signal Service</title>` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><style>${GUIDE_STYLE}</style></head><body>` +
    `<header><a href="/docs">API reference</a><a href="/docs/receiving-webhooks.md">Markdown</a>` +
    `<a href="/dashboard">Dashboard</a></header><main>${body}</main></body></html>`
  );
}

/** The guide ships in docs/ at the repository root, or beside the gateway in its image. */
function loadGuide(): string | undefined {
  for (const candidate of [
    path.join(__dirname, '..', '..', '..', 'docs', 'receiving-webhooks.md'),
    path.join(__dirname, '..', '..', '..', '..', '..', 'docs', 'receiving-webhooks.md'),
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
  const vendored = path.join(__dirname, '..', '..', '..', 'vendor', 'scalar');
  if (existsSync(path.join(vendored, 'standalone.js'))) return vendored;
  return path.join(path.dirname(require.resolve('@scalar/api-reference')), 'browser');
}

/**
 * The docs pages and the files they load. `rateHeaders`: the address's rate-limit headers,
 * counting nothing (`rateHeadersOnly`): a public page is never refused for its address.
 */
export function docsRouter(rateHeaders: RequestHandler, plan: Plan, publicUrl?: string): Router {
  const router = Router();
  const guide = loadGuide();
  const document = buildOpenApiDocument({
    serverUrl: publicUrl ?? '/',
    plan,
    guideMarkdown: guide,
  });
  const guideHtml = guidePage(guide);
  const html: RequestHandler = (_req, res, next) => {
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    next();
  };
  // Only a client that prefers HTML (a browser) gets the page; curl and the SDKs (*/* or JSON)
  // fall through to the 404 envelope like any other path outside the API, which counts them.
  const prefersHtml: RequestHandler = (req, _res, next) => {
    if (req.accepts(['application/json', 'text/html']) === 'text/html') next();
    else next('route');
  };
  router.get('/', prefersHtml, rateHeaders, html, (_req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(ROOT_PAGE);
  });
  router.get('/openapi.json', rateHeaders, (_req, res) => {
    res.json(document);
  });
  router.get('/docs', rateHeaders, html, (_req, res) => {
    res.type('html').send(PAGE);
  });
  router.get('/docs/init.js', rateHeaders, (_req, res) => {
    res.type('application/javascript').setHeader('Cache-Control', 'no-cache').send(INIT);
  });
  router.get('/docs/receiving-webhooks', rateHeaders, html, (_req, res) => {
    // Readable without JavaScript; the same text is in the reference's introduction.
    res.type('html').send(guideHtml);
  });
  router.get('/docs/receiving-webhooks.md', rateHeaders, (_req, res) => {
    res.type('text/markdown').send(guide ?? '# Receiving webhooks\n\nGuide not bundled.');
  });
  router.use('/docs/assets', rateHeaders, express.static(scalarBrowserDir(), { index: false, maxAge: '1h' }));
  return router;
}
