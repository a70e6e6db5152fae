import express, { type RequestHandler } from 'express';
import request from 'supertest';
import { docsRouter, guidePage } from './docs.router';

/** The docs pages as a browser gets them, from the router alone (no upstreams needed). */
describe('docs router', () => {
  const pass: RequestHandler = (_req, _res, next) => next();
  const app = express().use(docsRouter(pass, { per_minute: 60, per_day: 10_000 }));

  it('when /docs/receiving-webhooks is fetched, then the guide is HTML with its tables, code and links rendered, in the docs styles', async () => {
    const res = await request(app).get('/docs/receiving-webhooks').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toContain("default-src 'self'");
    const html = res.text;
    expect(html).toContain('<h1>Receiving webhooks</h1>');
    expect(html).toContain('<table>');
    expect(html).toContain('<a href="https://www.standardwebhooks.com/">Standard Webhooks</a>');
    expect(html).toMatch(/<pre><code class="language-ts">/);
    expect(html).toContain('<strong>Webhooks</strong>');
    expect(html).toContain('<a href="/docs">API reference</a>');
    expect(html).toContain('<style>');
    // No Markdown left raw: no `**` emphasis markers, no `| --- |` table rows.
    expect(html).not.toMatch(/\*\*[A-Za-z]/);
    expect(html).not.toMatch(/\|\s*-{3,}/);
  });

  it('when the guide holds raw HTML, then the page shows it as text', async () => {
    const res = await request(app).get('/docs/receiving-webhooks.md').expect(200);
    expect(res.text).toContain('# Receiving webhooks');
    expect(guidePage('# T\n\n<script>alert(1)</script>')).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('when /openapi.json is fetched, then the document is the one built from the route table', async () => {
    const doc = (await request(app).get('/openapi.json').expect(200)).body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/v1/auth/login'].post.security).toEqual([]);
    expect(doc.info.description).toContain('## Receiving webhooks');
  });

  // The gateway's 404 envelope for GET / is test/gateway-auth.test.ts's ("matches no route").
  it('when a browser opens /, then it is pointed to the dashboard and the reference; a JSON client falls through to the 404', async () => {
    const page = await request(app)
      .get('/')
      .set('Accept', 'text/html,application/xhtml+xml,*/*;q=0.8')
      .expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.text).toContain('<a href="/dashboard">Dashboard</a>');
    expect(page.text).toContain('<a href="/docs">API reference</a>');
    for (const accept of ['application/json', '*/*']) {
      const res = await request(app).get('/').set('Accept', accept).expect(404);
      expect(res.text).not.toContain('Dashboard');
    }
  });

  it('when a JSON client asks for /, then the router passes it on to the 404; a browser gets the page with the headers', async () => {
    let headed = 0;
    const headers: RequestHandler = (_req, _res, next) => {
      headed += 1;
      next();
    };
    const routed = express().use(docsRouter(headers, { per_minute: 60, per_day: 10_000 }));
    await request(routed).get('/').set('Accept', '*/*').expect(404);
    expect(headed).toBe(0);
    await request(routed).get('/').set('Accept', 'text/html').expect(200);
    expect(headed).toBe(1);
  });
});
