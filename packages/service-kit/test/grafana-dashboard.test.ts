import { readFileSync } from 'node:fs';
import path from 'node:path';
import { collectDefaultMetrics, Histogram, register } from 'prom-client';
import { metrics } from '../src';

/** The dashboard in infra/grafana reads only metrics the services actually export. */
describe('the Grafana dashboard', () => {
  const dashboard = JSON.parse(
    readFileSync(path.join(__dirname, '../../../infra/grafana/signal-service.json'), 'utf8'),
  ) as { panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }> };

  it('when every panel query is read, then each metric it names is one the services declare', async () => {
    for (const make of Object.values(metrics)) make();
    collectDefaultMetrics();
    const exported = new Set<string>();
    for (const m of await register.getMetricsAsJSON()) {
      exported.add(m.name);
      if (register.getSingleMetric(m.name) instanceof Histogram) for (const s of ['_bucket', '_count', '_sum']) exported.add(`${m.name}${s}`);
    }
    const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ title: p.title, expr: t.expr })));
    expect(queries.length).toBeGreaterThanOrEqual(15);
    const unknown: string[] = [];
    for (const { title, expr } of queries) {
      // Metric names: identifiers followed by a selector or range, minus PromQL's own words.
      const withoutGrouping = expr.replace(/\bby \([^)]*\)/g, '');
      const names = [...withoutGrouping.matchAll(/\b([a-z_][a-z0-9_]*)(?=\{|\[|\))/g)].map((m) => m[1]!);
      const promql = new Set(['rate', 'sum', 'max', 'min', 'histogram_quantile']);
      for (const n of names.filter((n) => !promql.has(n))) if (!exported.has(n)) unknown.push(`${title}: ${n}`);
    }
    expect(unknown).toEqual([]);
  });

  it('when a panel groups by a label, then that label is bounded (no path, id or key labels anywhere)', () => {
    const text = JSON.stringify(dashboard);
    expect(text).not.toMatch(/\b(path|url|account_id|key_id|signal_id)\b/);
  });
});
