import type { UsageBucket } from '@signal/contracts';
import { h } from './dom.js';
import { limitCaption } from './usage-caption.js';

const SVG = 'http://www.w3.org/2000/svg';
const OUTCOMES = [
  ['served', 'Served'],
  ['unauthorized', '401 Unauthorized'],
  ['rate_limited', '429 Rate limited'],
  ['server_error', '5xx Server error'],
] as const;

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/**
 * A stacked bar chart of requests by outcome, drawn as SVG (no chart library), with a text
 * summary for screen readers and the numbers in a table under a disclosure.
 */
export function usageChart(
  title: string,
  buckets: UsageBucket[],
  label: (iso: string) => string,
  plan?: { limit: number; per: 'minute' | 'day' },
): HTMLElement {
  const limit = plan?.limit;
  const width = 600;
  const height = 160;
  const pad = 24;
  const totals = buckets.map((b) => b.served + b.unauthorized + b.rate_limited + b.server_error);
  // The scale follows the data (a quarter above the peak), so 40 requests under a limit of 10,000
  // still make bars one can compare. The limit is a dashed line when it falls inside the scale,
  // else the caption says how far above the scale it is.
  const peak = Math.max(0, ...totals);
  const top = Math.max(10, Math.ceil(peak * 1.25));
  const max = limit !== undefined && limit <= top ? Math.max(limit, peak) : top;
  const limitShown = limit !== undefined && limit <= max;
  const barW = (width - pad) / buckets.length;
  const sum = (k: (typeof OUTCOMES)[number][0]) => buckets.reduce((a, b) => a + b[k], 0);
  const summary = `${title}: ${OUTCOMES.map(([k, t]) => `${sum(k)} ${t.toLowerCase()}`).join(', ')}; peak ${peak}${limit !== undefined ? `; limit ${limit}` : ''}.`;
  const chart = svg('svg', {
    viewBox: `0 0 ${width} ${height + 20}`,
    class: 'chart',
    role: 'img',
    'aria-label': summary,
  });
  chart.appendChild(svg('line', { x1: pad, y1: height, x2: width, y2: height, stroke: '#6e7781' }));
  chart.appendChild(
    Object.assign(svg('text', { x: 0, y: 10, 'font-size': 10, fill: '#4a5360' }), {
      textContent: String(max),
    }),
  );
  chart.appendChild(
    Object.assign(svg('text', { x: 0, y: height, 'font-size': 10, fill: '#4a5360' }), { textContent: '0' }),
  );
  if (limit !== undefined && limitShown) {
    const y = Math.max(1, height - (limit / max) * height);
    chart.appendChild(
      svg('line', {
        x1: pad,
        y1: y,
        x2: width,
        y2: y,
        stroke: '#a40e26',
        'stroke-dasharray': '4 3',
        class: 'limit-line',
      }),
    );
  }
  buckets.forEach((b, i) => {
    let y = height;
    for (const [k] of OUTCOMES) {
      if (!b[k]) continue;
      // At least a pixel: a few requests under a limit of thousands must still show.
      const hgt = Math.max(1, (b[k] / max) * height);
      y -= hgt;
      const rect = svg('rect', {
        x: pad + i * barW + 1,
        y,
        width: Math.max(1, barW - 2),
        height: hgt,
        class: `sw-${k}`,
      });
      rect.appendChild(Object.assign(svg('title', {}), { textContent: `${label(b.at)}: ${b[k]} ${k}` }));
      chart.appendChild(rect);
    }
  });
  [0, Math.floor(buckets.length / 2), buckets.length - 1].forEach((i) => {
    const b = buckets[i];
    if (!b) return;
    const t = svg('text', {
      x: Math.min(width - 60, pad + i * barW),
      y: height + 14,
      'font-size': 10,
      fill: '#4a5360',
    });
    t.textContent = label(b.at);
    chart.appendChild(t);
  });
  const rows = buckets.filter((_, i) => totals[i]! > 0);
  return h(
    'figure',
    { class: 'card' },
    h(
      'figcaption',
      {},
      h('strong', {}, title),
      plan === undefined
        ? null
        : h(
            'span',
            { class: 'muted block', 'data-limit': limitShown ? 'line' : 'above' },
            limitCaption(plan.limit, plan.per, max),
          ),
    ),
    chart,
    h(
      'ul',
      { class: 'legend' },
      OUTCOMES.map(([k, t]) => h('li', {}, h('span', { class: `sw-${k}` }), t)),
    ),
    h(
      'details',
      {},
      h('summary', {}, 'Numbers'),
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          {},
          h('caption', {}, title),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', { scope: 'col' }, 'Period'),
              OUTCOMES.map(([, t]) => h('th', { scope: 'col' }, t)),
            ),
          ),
          h(
            'tbody',
            {},
            rows.length
              ? rows.map((b) =>
                  h(
                    'tr',
                    {},
                    h('th', { scope: 'row' }, label(b.at)),
                    OUTCOMES.map(([k]) => h('td', {}, b[k])),
                  ),
                )
              : h('tr', {}, h('td', { colspan: 5 }, 'No requests in this period.')),
          ),
        ),
      ),
    ),
  );
}
