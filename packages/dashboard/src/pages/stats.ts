/** The statistics page. */
import type { Statistics } from '@signal/contracts';
import { get } from '../api.js';
import { field, h, select, table } from '../dom.js';
import { SIGNAL_TYPES, act, page } from '../shell.js';
import { pathOf } from '../generated/routes.js';

export async function statsView(): Promise<void> {
  const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const period = select(
    'period',
    [
      ['24h', 'Last 24 hours'],
      ['7d', 'Last 7 days'],
      ['30d', 'Last 30 days'],
      ['all', 'All time'],
    ],
    params.get('period') ?? 'all',
  );
  const type = select(
    'type',
    [['', 'Every type'], ...SIGNAL_TYPES.map((t): [string, string] => [t, t])],
    params.get('type') ?? '',
  );
  const form = h(
    'form',
    { class: 'card', 'aria-label': 'Choose period and type' },
    h('div', { class: 'grid' }, field('Period', period), field('Type', type)),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Show')),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams({ period: period.value });
    if (type.value) q.set('type', type.value);
    location.hash = `#/stats?${q.toString()}`;
  });
  const q = new URLSearchParams({ period: params.get('period') ?? 'all' });
  if (params.get('type')) q.set('type', params.get('type')!);
  const s = await act(() => get<Statistics>(`${pathOf('getStats')}?${q.toString()}`));
  const card = (label: string, value: string) =>
    h('div', { class: 'card' }, h('span', { class: 'stat' }, value), label);
  page(
    'Stats',
    form,
    s
      ? h(
          'div',
          {},
          h(
            'div',
            { class: 'grid' },
            card('signals', String(s.total_signals)),
            card('winners', String(s.winners)),
            card('win rate: winners per 100 signals of the period', `${s.win_rate.toFixed(1)} %`),
            card('average ROI', `${s.avg_roi.toFixed(1)} %`),
            card('best ROI', `${s.best_roi.toFixed(1)} %`),
          ),
          table(
            'By type',
            ['Type', 'Signals', 'Winners', 'Win rate (% of signals)'],
            Object.entries(s.by_type).map(([t, v]) => [
              t === params.get('type') ? h('strong', {}, `${t} (the type shown above)`) : t,
              v.total,
              v.winners,
              `${v.win_rate.toFixed(1)} %`,
            ]),
          ),
          h(
            'p',
            { class: 'muted' },
            'Every type, for the period chosen: the type filter narrows the figures above, never this table.',
          ),
        )
      : null,
  );
}
