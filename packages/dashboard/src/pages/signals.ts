/** The signals list (live from the stream) and one signal. */
import type { SignalDetail, SignalListItem } from '@signal/contracts';
import { ApiError, apiError, call, get, isRecord, waitText } from '../api.js';
import { badge, field, fmtDate, fmtRelative, h, notRead, replace, select, table, zoneName } from '../dom.js';
import {
  SIGNAL_TYPES,
  SIGNAL_STATUSES,
  WEBHOOK_EVENTS,
  onLeave,
  act,
  announce,
  errorText,
  every,
  page,
  unsay,
} from '../shell.js';
import { pathOf } from '../generated/routes.js';

export async function signalsView(): Promise<void> {
  const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const type = select(
    'type',
    [['', 'Any type'], ...SIGNAL_TYPES.map((t): [string, string] => [t, t])],
    params.get('type') ?? '',
  );
  const status = select(
    'status',
    [['', 'Any status'], ...SIGNAL_STATUSES.map((t): [string, string] => [t, t])],
    params.get('status') ?? '',
  );
  const since = h('input', { type: 'datetime-local', name: 'since', value: params.get('since') ?? '' });
  const live = h('input', { type: 'checkbox', name: 'live', checked: true, id: 'live' });
  const liveState = h('span', { class: 'muted', role: 'status' }, '');
  const filters = h(
    'form',
    { class: 'card', 'aria-label': 'Filter signals' },
    h(
      'div',
      { class: 'grid' },
      field('Type', type),
      field('Status', status),
      field('Created after', since, `Your time zone: ${zoneName()}.`),
    ),
    h('label', {}, live, ' Live (new signals and status changes appear as they happen) ', liveState),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Apply filters')),
  );
  filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    if (type.value) q.set('type', type.value);
    if (status.value) q.set('status', status.value);
    if (since.value) q.set('since', since.value);
    location.hash = `#/signals?${q.toString()}`;
  });
  const listSlot = h('div', { 'aria-live': 'off' });
  // How long ago the newest signal came: a feed gone quiet shows here, not as a silent list.
  const lastSignal = h('p', { class: 'muted', 'data-last-signal': '' });
  let newestAt: number | undefined;
  const filteredView = Boolean(params.get('type') || params.get('status') || params.get('since'));
  // Until the list is read, "no signal yet" would be a guess: a refused read (a 429 while the
  // account's minute is spent) says so instead, and is tried again.
  let listState: 'reading' | 'read' | 'refused' = 'reading';
  const showLastSignal = () => {
    if (listState !== 'read') {
      replace(lastSignal, listState === 'reading' ? 'Reading the signals…' : notRead('the signals'));
      return;
    }
    if (newestAt === undefined) {
      replace(lastSignal, filteredView ? 'No signal matches these filters yet.' : 'No signal yet.');
      return;
    }
    const seconds = Math.max(0, Math.round((Date.now() - newestAt) / 1000));
    const ago =
      seconds < 120
        ? `${seconds} s ago`
        : seconds < 7200
          ? `${Math.round(seconds / 60)} min ago`
          : fmtRelative(new Date(newestAt).toISOString());
    replace(lastSignal, `${filteredView ? 'Last matching signal' : 'Last signal'} ${ago}.`);
  };
  const noteNewest = (iso: string) => {
    const at = Date.parse(iso);
    if (!Number.isNaN(at) && (newestAt === undefined || at > newestAt)) newestAt = at;
  };
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Load more');
  let cursor: string | null = null;
  let rows: SignalListItem[] = [];
  let total = 0;
  const query = (c: string | null) => {
    const q = new URLSearchParams({ limit: '25' });
    if (params.get('type')) q.set('type', params.get('type')!);
    if (params.get('status')) q.set('status', params.get('status')!);
    if (params.get('since')) q.set('since', new Date(params.get('since')!).toISOString());
    if (c) q.set('cursor', c);
    return `${pathOf('listSignals')}?${q.toString()}`;
  };
  const render = (total: number) => {
    replace(
      listSlot,
      h('p', { class: 'muted' }, `${total} signals match; showing ${rows.length}.`),
      table(
        'Signals, newest first',
        ['Signal', 'Token', 'Type', 'Status', 'ROI %', 'Market cap', 'Created'],
        rows.map((s) => [
          h('a', { href: `#/signals/${s.id}` }, h('code', {}, s.id.slice(0, 14) + '…')),
          `${s.token.symbol} · ${s.token.name}`,
          s.type,
          badge(s.performance.status),
          s.performance.roi.toFixed(1),
          s.metrics.mcap_current.toLocaleString(),
          fmtDate(s.created_at),
        ]),
      ),
    );
    more.hidden = !cursor;
  };
  const load = async (append: boolean) => {
    const r = await act(() => call<SignalListItem[]>('GET', query(append ? cursor : null)));
    if (!r) {
      if (listState === 'reading') listState = 'refused';
      showLastSignal();
      return;
    }
    listState = 'read';
    rows = append ? [...rows, ...r.data] : r.data;
    for (const row of rows.slice(0, 1)) noteNewest(row.created_at);
    showLastSignal();
    cursor = r.meta?.next_cursor ?? null;
    total = r.meta?.total ?? rows.length;
    render(total);
  };
  more.addEventListener('click', () => void load(true));
  // Live: the signal stream (GET /v1/signals/stream), not polling. Opening it is one request of
  // the plan and its events cost nothing; EventSource reconnects and resumes from the last event
  // id by itself, and a stream this page opens again (after a refusal, or Live ticked again)
  // resumes from it too (`last_event_id`), so the signals made meanwhile arrive. A new signal
  // becomes a row, a status change updates its row, a `reset` (the stream could not resume)
  // reads the list again.
  let stream: EventSource | undefined;
  /** The id of the last event received (none yet: the stream starts from now). */
  let lastEventId = '';
  /** How long a stream the browser gave up waits before it is opened again (doubling, to 60 s). */
  let reopenMs = 1000;
  // Events that arrive before the first page is read wait for it (then a row it already has is
  // updated, not added twice): the stream opens first, so nothing between the two is missed.
  let waiting: Array<[string, MessageEvent<string>]> | undefined = [];
  const onEvent = (name: string, ev: MessageEvent<string>) => {
    if (waiting) {
      waiting.push([name, ev]);
      return;
    }
    const event = streamEvent(name, ev.data);
    if (!event) return;
    const at = rows.findIndex((r) => r.id === event.row.id);
    if (at >= 0) {
      const shown = rows[at]!;
      // The event carries the signal as it is now: its market cap moves with its status.
      const metrics =
        event.mcapCurrent === undefined
          ? shown.metrics
          : { ...shown.metrics, mcap_current: event.mcapCurrent };
      const updated = { ...shown, performance: event.row.performance, metrics };
      // A status change can take a row out of a status filter: it leaves the page and the count.
      if (matchesFilters(updated, params)) rows[at] = updated;
      else {
        rows.splice(at, 1);
        total -= 1;
      }
    } else if (name === 'signal.new' && matchesFilters(event.row, params)) {
      rows = [event.row, ...rows];
      total += 1;
      noteNewest(event.row.created_at);
      showLastSignal();
    } else if (params.get('status') && matchesFilters(event.row, params)) {
      // A signal whose status change brings it into the filter counts; it is shown where its
      // id (its creation time) places it among the rows read so far, or last when all are read.
      total += 1;
      const before = rows.findIndex((r) => r.id < event.row.id);
      if (before >= 0) rows.splice(before, 0, event.row);
      else if (cursor === null) rows.push(event.row);
    } else return;
    render(total);
  };
  /** The refusal shown in the status line (it goes once a stream opens) and the pending reopen. */
  let refusal: string | undefined;
  let reopenTimer: ReturnType<typeof setTimeout> | undefined;
  const openStream = () => {
    clearTimeout(reopenTimer);
    const q = new URLSearchParams({ events: WEBHOOK_EVENTS.join(',') });
    if (params.get('type')) q.set('type', params.get('type')!);
    if (lastEventId) q.set('last_event_id', lastEventId);
    const url = `${pathOf('streamSignals')}?${q.toString()}`;
    stream = new EventSource(url);
    liveState.textContent = '(connecting…)';
    stream.addEventListener('open', () => {
      liveState.textContent = '(connected)';
      reopenMs = 1000;
      if (refusal) unsay(refusal);
      refusal = undefined;
    });
    const opened = stream;
    stream.addEventListener('error', (ev) => {
      // A connection that failed (EventSource retries by itself), not the stream's own `error`.
      if (ev instanceof MessageEvent) return;
      liveState.textContent = '(reconnecting…)';
      // EventSource gives up for good on an answer that is not a stream (a 401 once the session
      // ended, a 429 with every stream of the plan open) and never says which. The stream's
      // request is made again to read its answer: an ended session goes to log in, as any
      // action's 401 does; a refusal is said, and the stream opens again after the wait it
      // names, longer and longer while it lasts (to 60 s), or when "Connect now" is clicked.
      if (opened.readyState !== EventSource.CLOSED) return;
      void streamRefusal(url).then((err) => {
        if (stream !== opened || !live.checked) return;
        if (err?.status === 401) {
          void act(() => Promise.reject(err));
          return;
        }
        // A request the API refuses as it is (a filter it does not know, from an edited link) is
        // refused again however often it is made, and each time counts against the plan: it is
        // said once and not made again until the filters change.
        if (err && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429) {
          liveState.textContent = '(refused)';
          refusal = `Live updates refused: ${errorText(err)} Not asked for again until the filters change.`;
          announce(refusal, true);
          return;
        }
        reopenMs = Math.min(reopenMs * 2, 60_000);
        const waitMs = Math.max(reopenMs, (err?.retryAfter ?? 0) * 1000);
        reopenTimer = setTimeout(() => {
          if (stream === opened && live.checked) openStream();
        }, waitMs);
        if (!err) return;
        const wait = waitText(waitMs / 1000);
        liveState.textContent = `(refused: trying again in ${wait})`;
        refusal = `Live updates refused: ${errorText(err)} They are asked for again in ${wait}.`;
        announce(
          refusal,
          true,
          h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              onclick: () => {
                if (stream === opened && live.checked) openStream();
              },
            },
            'Connect now',
          ),
        );
      });
    });
    for (const name of WEBHOOK_EVENTS)
      stream.addEventListener(name, (ev: MessageEvent<string>) => {
        if (ev.lastEventId) lastEventId = ev.lastEventId;
        onEvent(name, ev);
      });
    stream.addEventListener('reset', (ev: MessageEvent<string>) => {
      if (ev.lastEventId) lastEventId = ev.lastEventId;
      void load(false);
    });
  };
  const closeStream = () => {
    clearTimeout(reopenTimer);
    stream?.close();
    stream = undefined;
    liveState.textContent = '';
  };
  live.addEventListener('change', () => (live.checked ? openStream() : closeStream()));
  onLeave(closeStream);
  page('Signals', filters, lastSignal, listSlot, more);
  every(1000, showLastSignal);
  every(10_000, () => (listState === 'refused' ? load(false) : undefined));
  if (live.checked) openStream();
  await load(false);
  const early = waiting;
  waiting = undefined;
  for (const [name, ev] of early) onEvent(name, ev);
}

const numberIn = (o: Record<string, unknown>, k: string): number => (typeof o[k] === 'number' ? o[k] : 0);
const textIn = (o: Record<string, unknown>, k: string): string => (typeof o[k] === 'string' ? o[k] : '');

/** A stream event's signal as a list row (the webhook payload: the signal as it is now), or nothing. */
function streamEvent(
  name: string,
  text: string,
): { row: SignalListItem; mcapCurrent: number | undefined } | undefined {
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(payload) || !isRecord(payload.data)) return undefined;
  const d = payload.data;
  const token = isRecord(d.token) ? d.token : {};
  const metrics = isRecord(d.metrics) ? d.metrics : {};
  const perf = isRecord(d.performance) ? d.performance : undefined;
  const status = perf ? textIn(perf, 'status') : 'active';
  const type = textIn(d, 'type');
  if (!SIGNAL_STATUSES.some((s) => s === status) || !SIGNAL_TYPES.some((t) => t === type)) return undefined;
  return {
    mcapCurrent: typeof metrics.mcap_current === 'number' ? metrics.mcap_current : undefined,
    row: {
      id: textIn(d, 'id'),
      token: {
        symbol: textIn(token, 'symbol'),
        name: textIn(token, 'name'),
        contract: textIn(token, 'contract'),
        age_hours: numberIn(token, 'age_hours'),
      },
      metrics: {
        mcap_entry: numberIn(metrics, 'mcap_entry'),
        mcap_current: numberIn(metrics, 'mcap_current') || numberIn(metrics, 'mcap_entry'),
        volume_24h: numberIn(metrics, 'volume_24h'),
        holders: numberIn(metrics, 'holders'),
        liquidity: numberIn(metrics, 'liquidity'),
      },
      performance: {
        roi: perf ? numberIn(perf, 'roi') : 0,
        ath_roi: perf ? numberIn(perf, 'ath_roi') : 0,
        status: SIGNAL_STATUSES.find((s) => s === status) ?? 'active',
      },
      type: SIGNAL_TYPES.find((t) => t === type) ?? 'new',
      is_premium: d.is_premium === true,
      created_at: name === 'signal.new' ? textIn(payload, 'timestamp') : new Date().toISOString(),
    },
  };
}

/** Whether a new signal belongs on the page as filtered (the stream already filters by type). */
function matchesFilters(row: SignalListItem, params: URLSearchParams): boolean {
  const status = params.get('status');
  return !status || row.performance.status === status;
}

/** A signal id as the API makes them (`sig_` and a ULID): anything else names no signal. */
const SIGNAL_ID = /^sig_[0-9A-Za-z]+$/;

export async function signalView(id: string): Promise<void> {
  // Anything else is not asked for: `stream` would open the live stream, `..` name the list.
  const isId = SIGNAL_ID.test(id);
  const s = isId ? await act(() => get<SignalDetail>(pathOf('getSignal', { signal_id: id }))) : undefined;
  if (!s) {
    page('Signal', h('p', {}, h('a', { href: '#/signals' }, '← Signals')));
    if (!isId) announce(`There is no signal ${JSON.stringify(id)}.`, true);
    return;
  }
  const row = (k: string, v: Node | string) => [h('dt', {}, k), h('dd', {}, v)];
  const link = (u: string | null) =>
    u ? h('a', { href: u, rel: 'noopener noreferrer', target: '_blank' }, u) : '—';
  page(
    `${s.token.symbol} · ${s.token.name}`,
    h('p', {}, h('a', { href: '#/signals' }, '← Signals')),
    h(
      'dl',
      { class: 'detail card' },
      ...row('Id', h('code', {}, s.id)),
      ...row('Type', s.type),
      ...row('Status', badge(s.performance.status)),
      ...row('Premium', s.is_premium ? 'yes' : 'no'),
      ...row('Contract', h('code', {}, s.token.contract)),
      ...row('Token age', `${s.token.age_hours} h`),
      ...row('DEX paid', s.token.dex_paid ? 'yes' : 'no'),
      ...row('ROI / ATH ROI', `${s.performance.roi.toFixed(2)} % / ${s.performance.ath_roi.toFixed(2)} %`),
      ...row(
        'Time to ATH',
        s.performance.time_to_ath_hours === null ? '—' : `${s.performance.time_to_ath_hours} h`,
      ),
      ...row(
        'Market cap entry / current / ATH',
        `${s.metrics.mcap_entry.toLocaleString()} / ${s.metrics.mcap_current.toLocaleString()} / ${s.metrics.mcap_ath.toLocaleString()}`,
      ),
      ...row('Volume 24 h', s.metrics.volume_24h.toLocaleString()),
      ...row('Holders', s.metrics.holders.toLocaleString()),
      ...row('Liquidity', s.metrics.liquidity.toLocaleString()),
      ...row('Twitter', link(s.token.socials.twitter)),
      ...row('Telegram', link(s.token.socials.telegram)),
      ...row('Website', link(s.token.socials.website)),
      ...row('Created', fmtDate(s.created_at)),
      ...row('Updated', fmtDate(s.updated_at)),
    ),
  );
}

/**
 * Why the stream at `url` was refused: its request made again and its answer read (a stream that
 * opens this time is closed at once: nothing refused it, EventSource may open it again).
 */
async function streamRefusal(url: string): Promise<ApiError | undefined> {
  const stop = new AbortController();
  try {
    const res = await fetch(url, {
      headers: { accept: 'text/event-stream' },
      credentials: 'same-origin',
      cache: 'no-store',
      signal: stop.signal,
    });
    if (res.ok) {
      stop.abort();
      return undefined;
    }
    const json: unknown = await res.json().catch(() => undefined);
    // Without the API's own "Try again in 5 s": the page names the wait it keeps.
    return apiError(res.status, json, false);
  } catch {
    stop.abort();
    return new ApiError(0, 'NETWORK', 'The server could not be reached. Check your connection.');
  }
}
