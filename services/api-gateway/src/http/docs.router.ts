import { Router, type RequestHandler } from 'express';
import { buildOpenApiDocument } from '../openapi/document';

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Signal Service API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1a1a1a}
h1{margin-bottom:.2rem}.op{border:1px solid #ddd;border-radius:6px;margin:.8rem 0;padding:.6rem .9rem}
.m{display:inline-block;min-width:4.2rem;font-weight:700;text-transform:uppercase}.get{color:#0a7}.post{color:#06c}.patch{color:#a60}.delete{color:#c22}
code,pre{background:#f4f4f4;border-radius:4px;padding:.1rem .3rem}pre{padding:.6rem;overflow:auto;max-height:24rem}
table{border-collapse:collapse}td,th{border-bottom:1px solid #eee;padding:.2rem .6rem;text-align:left;vertical-align:top}
</style></head><body>
<h1>Signal Service API</h1><p id="desc"></p><p><a href="/openapi.json">openapi.json</a> (OpenAPI 3.1)</p>
<div id="ops">Loading…</div><script src="/docs/app.js"></script></body></html>`;

// Plain DOM rendering of the served document: no third-party script, works under helmet's CSP.
const SCRIPT = `
fetch('/openapi.json').then(r => r.json()).then(doc => {
  document.getElementById('desc').textContent = doc.info.description;
  const root = document.getElementById('ops'); root.textContent = '';
  const el = (tag, text, cls) => { const e = document.createElement(tag); if (text) e.textContent = text; if (cls) e.className = cls; return e; };
  for (const [path, ops] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(ops)) {
    const box = el('details', null, 'op'); const sum = el('summary');
    sum.append(el('span', method, 'm ' + method), el('code', path), document.createTextNode(' — ' + (op.summary || '')));
    box.append(sum);
    if (op.parameters && op.parameters.length) {
      const t = el('table'); t.append(el('tr')); t.rows[0].append(el('th','parameter'), el('th','in'), el('th','description'));
      for (const p of op.parameters) { const tr = el('tr'); tr.append(el('td', p.name + (p.required ? ' *' : '')), el('td', p.in), el('td', (p.description || '') + ' ' + JSON.stringify(p.schema))); t.append(tr); }
      box.append(t);
    }
    for (const [status, r] of Object.entries(op.responses || {})) { box.append(el('p', status + ': ' + r.description)); }
    const schemaRef = op.responses && (op.responses['200'] || op.responses['201'] || op.responses['202']);
    const s = schemaRef && schemaRef.content && schemaRef.content['application/json'].schema;
    if (s) box.append(el('pre', JSON.stringify(s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s, null, 2)));
    root.append(box);
  }
});`;

export function docsRouter(guard: RequestHandler, publicUrl?: string): Router {
  const router = Router();
  const document = buildOpenApiDocument(publicUrl ?? '/');
  router.get('/openapi.json', guard, (_req, res) => {
    res.json(document);
  });
  router.get('/docs', guard, (_req, res) => {
    res.type('html').send(PAGE);
  });
  router.get('/docs/app.js', (_req, res) => {
    res.type('application/javascript').send(SCRIPT);
  });
  return router;
}
