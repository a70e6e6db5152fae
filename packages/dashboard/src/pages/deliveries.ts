/** One webhook's deliveries, each with its attempts; test, re-send and recover. */
import type { Delivery, WebhookSubscription } from '@signal/contracts';
import { ApiError, SubmissionKey, SubmissionKeys, call, get, post, waitText } from '../api.js';
import { HEADER_EVERY_MS, notBeforeAfter, refreshDue, type RefreshState } from '../polling.js';
import {
  badge,
  breakable,
  field,
  fmtDate,
  fmtRelative,
  h,
  replace,
  select,
  table,
  timeEl,
  zoneName,
  localMinute,
} from '../dom.js';
import {
  DELIVERY_EVENTS,
  announce,
  sayInstead,
  offer,
  errorText,
  unsay,
  showFormError,
  act,
  every,
  onSubmit,
  oneAtATime,
  onLeave,
  page,
  type DeliveryAttempt,
} from '../shell.js';
import { shownBody } from '../bodies.js';
import { lastResponseOf, NOT_SENT_WHILE_DISABLED, outcomeText } from '../health.js';
import { attemptOutcome, webhookState } from './webhooks.js';
import { pathOf } from '../generated/routes.js';

/** A body as sent or received (see `shownBody`), scrollable and focusable, with what was done to show it. */
function bodyBlock(label: string, body: string, encoding?: 'text' | 'base64'): HTMLElement[] {
  const shown = shownBody(body, encoding);
  return [
    h('pre', { class: 'body', tabindex: 0, 'aria-label': label }, shown.text === '' ? '(empty)' : shown.text),
    ...(shown.note ? [h('p', { class: 'muted' }, shown.note)] : []),
  ];
}

function headerList(label: string, headers: Record<string, string>): HTMLElement {
  const entries = Object.entries(headers);
  return h(
    'dl',
    { class: 'headers', 'aria-label': label },
    entries.length
      ? entries.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])
      : [h('dt', {}, '(none)'), h('dd', {}, '')],
  );
}

/** One attempt as Svix shows it: what was sent, what came back, when and how long. */
export function attemptView(deliveryId: string, a: DeliveryAttempt): HTMLElement {
  const outcome = outcomeText(a.status_code, a.error) ?? 'no response';
  const ok = a.error === null;
  return h(
    'article',
    { class: 'attempt', 'aria-label': `Attempt ${a.attempt} of ${deliveryId}` },
    h('h3', {}, `Attempt ${a.attempt}: `, badge(ok ? 'succeeded' : 'failed'), ` ${outcome}`),
    h(
      'p',
      { class: 'muted' },
      'Started ',
      timeEl(a.started_at),
      ` · took ${Math.round(a.duration_ms).toLocaleString()} ms`,
    ),
    h('h4', {}, 'Request'),
    a.request
      ? [
          h('p', {}, 'POST ', breakable(a.request.url)),
          headerList(`Request headers of attempt ${a.attempt}`, a.request.headers),
          ...bodyBlock(`Request body of attempt ${a.attempt}`, a.request.body),
        ]
      : h(
          'p',
          { class: 'muted' },
          'Not recorded: nothing was sent, or the attempt is older than this record.',
        ),
    h('h4', {}, 'Response'),
    a.response
      ? [
          h('p', {}, `Status ${a.response.status}`),
          headerList(`Response headers of attempt ${a.attempt}`, a.response.headers),
          a.response.headers_truncated
            ? h(
                'p',
                { class: 'muted' },
                'The headers went on: only the first 50 are kept, each cut at 1,024 characters.',
              )
            : null,
          ...bodyBlock(`Response body of attempt ${a.attempt}`, a.response.body, a.response.body_encoding),
          a.response.body_truncated
            ? h(
                'p',
                { class: 'muted' },
                // A response that failed its attempt with a timeout or a reset is one whose body
                // did not end; any other went on past what is kept.
                a.error === 'timeout' || a.error === 'connection_reset'
                  ? `The body did not end (${a.error}): what arrived of it is shown, at most 4 KB.`
                  : 'The body went on: only its first 4 KB are kept.',
              )
            : null,
        ]
      : h('p', { class: 'muted' }, `No response (${a.error ?? 'none'}).`),
  );
}

/** "1 delivery", "1,234 deliveries". */
const howMany = (n: number): string => `${n.toLocaleString()} deliver${n === 1 ? 'y' : 'ies'}`;

/** How far off an attempt due at `due` is, as said after its time: " (in 7 s)", or that it is being made. */
const dueNote = (due: string, now: number): string =>
  Date.parse(due) <= now ? ' (attempt under way)' : ` (${fmtRelative(due)})`;

/**
 * A delivery's state for people: pending ones say when their next attempt is, or that it is
 * being made (its time has come: the attempt is on its way or waiting for the receiver); failed
 * ones that nothing more is tried by itself (a failed row looks like a pending one otherwise).
 */
function deliveryState(d: Delivery, now = Date.now()): HTMLElement {
  const due = d.status === 'pending' && d.next_attempt_at ? d.next_attempt_at : undefined;
  return h(
    'span',
    {},
    badge(d.status),
    due === undefined
      ? d.status === 'failed'
        ? h('span', { class: 'muted block' }, 'no more automatic attempts')
        : null
      : Date.parse(due) <= now
        ? h('span', { class: 'muted block' }, 'attempt under way (due ', timeEl(due), ')')
        : h(
            'span',
            { class: 'muted block' },
            'next attempt ',
            timeEl(due),
            h('span', { 'data-due': due }, dueNote(due, now)),
          ),
  );
}

export async function deliveriesView(webhookId: string): Promise<void> {
  const shownOn = location.hash;
  let refused: ApiError | undefined;
  const hook = await act(() =>
    get<WebhookSubscription>(pathOf('getWebhook', { webhook_id: webhookId })).catch((err: unknown) => {
      if (err instanceof ApiError) refused = err;
      throw err;
    }),
  );
  if (!hook) {
    // The refusal is announced; the page offers the way back. A refusal with a wait (the plan's
    // minute spent by the account's keys, the service busy) is read again once the wait is over,
    // so the debugger comes back by itself rather than stay an empty page.
    const back = h('a', { href: '#/webhooks' }, '← Webhooks');
    const readAgainAt = refused ? notBeforeAfter(Date.now(), refused.status, refused.retryAfter) : 0;
    if (readAgainAt === 0) {
      page('Deliveries', h('p', {}, back));
      return;
    }
    const wait = (readAgainAt - Date.now()) / 1000;
    page(
      'Deliveries',
      h(
        'p',
        { class: 'muted' },
        `Not read: read again in ${waitText(wait)}. The dashboard's reads share the account's rate limit with its API keys.`,
      ),
      h('p', {}, back),
    );
    const said = errorText(refused);
    const timer = setTimeout(() => {
      if (location.hash !== shownOn) return;
      unsay(said);
      void deliveriesView(webhookId);
    }, readAgainAt - Date.now());
    onLeave(() => clearTimeout(timer));
    return;
  }
  const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const status = select(
    'status',
    [
      ['', 'Any status'],
      ['pending', 'pending'],
      ['succeeded', 'succeeded'],
      ['failed', 'failed'],
    ],
    params.get('status') ?? '',
  );
  const event = select(
    'event',
    [['', 'Any event'], ...DELIVERY_EVENTS.map((e): [string, string] => [e, e])],
    params.get('event') ?? '',
  );
  const pageNo = Number(params.get('page') ?? '1') || 1;
  const filters = h(
    'form',
    { class: 'card', 'aria-label': 'Filter deliveries' },
    h('div', { class: 'grid' }, field('Status', status), field('Event', event)),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Apply filters')),
  );
  filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    if (status.value) q.set('status', status.value);
    if (event.value) q.set('event', event.value);
    location.hash = `#/webhooks/${webhookId}?${q.toString()}`;
  });

  /**
   * When the list is read again by itself (polling.ts): soon after the next pending attempt is
   * due, never while nothing is pending, and never sooner than four times the last read took. The
   * page reads through the account's plan like any client, so it does not poll a delivery whose
   * next attempt is minutes away every 2 seconds, nor a long history's slow page back to back.
   * A read the API refused with a wait (429: the plan's limit) holds every read until it is over.
   */
  /** What the last refused read said in the status line (a later read that succeeds clears it). */
  let readError: string | undefined;
  const polling: RefreshState = {
    dueAt: Number.POSITIVE_INFINITY,
    liveUntil: 0,
    lastEnd: 0,
    lastTook: 0,
    notBefore: 0,
  };
  /** A read whose refusal names a wait holds the page's next reads until then. */
  const held =
    <T>(read: () => Promise<T>) =>
    () =>
      read().catch((err: unknown) => {
        readError = errorText(err);
        if (err instanceof ApiError)
          polling.notBefore = Math.max(
            polling.notBefore,
            notBeforeAfter(Date.now(), err.status, err.retryAfter),
          );
        throw err;
      });
  /** After an action that queued deliveries: the list follows them for 15 s (once any hold ends). */
  const follow = async () => {
    polling.liveUntil = Math.max(Date.now(), polling.notBefore) + 15_000;
    await refresh();
  };
  const testEvent = select(
    'event',
    DELIVERY_EVENTS.map((e): [string, string] => [e, e]),
    'webhook.test',
  );
  // Test, recover and re-send are refused (409) while the subscription is disabled: not offered.
  const testButton = h('button', { type: 'submit' }, 'Send test');
  const recoverButton = h('button', { type: 'submit' }, 'Recover deliveries');
  let disabledWhy: string | undefined;
  const testForm = h(
    'form',
    { class: 'card', 'aria-label': 'Send a test event' },
    field('Test event', testEvent, 'A sample payload in this event’s shape, marked "test": true.'),
    h('div', { class: 'actions' }, testButton),
  );
  // A test whose answer never came is sent again with its key: one test delivery, not two.
  const test = new SubmissionKey();
  onSubmit(testForm, async () => {
    const body = { event: testEvent.value };
    const queued = `Test ${body.event} queued.`;
    const d = await act(
      () =>
        post<Delivery>(pathOf('sendWebhookTest', { webhook_id: webhookId }), body, {
          idempotencyKey: test.for(body),
        }),
      queued,
      testForm,
    );
    if (!d) return;
    test.done();
    await follow();
    // What came of it, said where "queued" was: delivered, refused, timed out, or still waiting.
    // Followed beside the form, which takes the next test at once.
    void attemptOutcome(webhookId, d.id, 'Test').then((outcome) => {
      if (location.hash === shownOn) sayInstead(queued, outcome.text, !outcome.ok);
    });
  });

  const since = h('input', {
    type: 'datetime-local',
    name: 'since',
    required: true,
    value: localMinute(Date.now() - 86_400_000),
  });
  const recoverForm = h(
    'form',
    { class: 'card', 'aria-label': 'Recover deliveries' },
    field(
      'Attempt now every delivery that failed or waits for a retry, created since',
      since,
      `Your time zone: ${zoneName()}. Each gets one attempt now; asking again queues none twice.`,
    ),
    h('div', { class: 'actions' }, recoverButton),
  );
  // Each page's request keeps its Idempotency-Key until it is answered: sent again after a lost
  // answer, it is answered as the first was.
  const recovery = new SubmissionKey();
  onSubmit(recoverForm, async () => {
    const at = new Date(since.value);
    if (Number.isNaN(at.getTime())) return showFormError(recoverForm, new Error('Choose a date and time.'));
    // One page of deliveries per call: the next is asked for with the cursor until there is none.
    let queued = 0;
    let cursor: string | null = null;
    let from = at.toISOString();
    for (let pages = 0; pages < 100; pages++) {
      const body: { since: string; cursor?: string } = { since: at.toISOString() };
      if (cursor) body.cursor = cursor;
      const r = await act(
        () =>
          post<{ since: string; queued: number; next_cursor?: string | null }>(
            pathOf('recoverWebhook', { webhook_id: webhookId }),
            body,
            { idempotencyKey: recovery.for(body) },
          ),
        undefined,
        recoverForm,
      );
      if (!r) return;
      recovery.done();
      queued += r.queued;
      from = r.since;
      cursor = r.next_cursor ?? null;
      if (!cursor) break;
    }
    announce(
      queued === 0
        ? // The response does not tell "all were queued already" from "none failed or waits".
          `Nothing newly queued since ${fmtDate(from)}: deliveries already queued, or just attempted by a retry or recover, are not queued again, and no other failed or is waiting.`
        : `${queued} deliver${queued === 1 ? 'y' : 'ies'} since ${fmtDate(from)} queued for an attempt now.`,
    );
    await follow();
  });

  // Next pages are read by the list's cursor: deliveries made since then do not shift the rows a
  // developer is reading while the page refreshes itself (a page number would).
  const cursor = params.get('cursor');
  const q = new URLSearchParams({ limit: '20' });
  if (cursor) q.set('cursor', cursor);
  else q.set('page', String(pageNo));
  if (params.get('status')) q.set('status', params.get('status')!);
  if (params.get('event')) q.set('event', params.get('event')!);
  const listSlot = h('div', {});
  const pagerSlot = h('div', {});
  const liveNote = h('p', { class: 'muted' });
  /** Deliveries whose attempts are shown, with their last detail. */
  const open = new Map<string, Delivery | undefined>();
  // A link to one delivery (`open=`, as a test's outcome gives) shows its attempts: on the page
  // read, it is open; elsewhere it is dropped with the others not on the page.
  const linked = params.get('open');
  if (linked && /^dlv_[0-9A-Za-z]+$/.test(linked)) open.set(linked, undefined);
  /** Each delivery's re-send key, kept across redraws until its request is answered. */
  const retryKeys = new SubmissionKeys();
  let generation = 0;
  let hookJustRead = true;
  /** When the subscription shown in the header was read, and each listed delivery's status then. */
  let hookReadAt = Date.now();
  let shownStatus = new Map<string, string>();
  const render = (deliveries: Delivery[], meta?: { total: number; total_pages: number }) => {
    // A redraw puts the focus back where it was (the same control of the same delivery).
    const focused = document.activeElement?.closest('[data-focus]')?.getAttribute('data-focus');
    const cells = deliveries.map((d) => {
      const full = open.get(d.id);
      const count = full?.attempts?.length ?? d.attempts_made;
      const shown = open.has(d.id);
      const panelId = `attempts-${d.id}`;
      const toggle = h(
        'button',
        {
          type: 'button',
          class: 'link',
          'aria-expanded': shown ? 'true' : 'false',
          'aria-controls': panelId,
          'data-focus': `attempts:${d.id}`,
          onclick: async () => {
            if (open.has(d.id)) open.delete(d.id);
            else open.set(d.id, undefined);
            await refresh(true);
          },
        },
        `Attempts (${count})`,
      );
      return {
        d,
        row: [
          h('code', {}, d.id),
          d.event,
          deliveryState(full ?? d),
          lastResponseOf(full ?? d) ?? lastResponseOf(d) ?? '—',
          timeEl(d.created_at),
          h(
            'div',
            { class: 'actions' },
            toggle,
            (full ?? d).status === 'failed' || (full ?? d).status === 'pending'
              ? offer(
                  h(
                    'button',
                    {
                      type: 'button',
                      class: 'secondary',
                      'data-focus': `resend:${d.id}`,
                      'aria-label':
                        (full ?? d).status === 'failed'
                          ? `Re-send delivery ${d.id}`
                          : `Retry delivery ${d.id} now`,
                      onclick: oneAtATime(async () => {
                        const before = full ?? d;
                        const retrying = before.status === 'pending';
                        const asked = retrying ? 'Delivery attempted now.' : 'Delivery re-sent.';
                        const key = retryKeys.of(d.id);
                        if (
                          await act(
                            () =>
                              post(
                                pathOf('retryWebhookDelivery', { webhook_id: webhookId, delivery_id: d.id }),
                                undefined,
                                { idempotencyKey: key.for({}) },
                              ),
                            asked,
                          )
                        ) {
                          key.done();
                          await follow();
                          // What came of the attempt, said where "attempted now" was.
                          void attemptOutcome(
                            webhookId,
                            d.id,
                            retrying ? 'Retry' : 'Re-send',
                            before.attempts_made,
                          ).then((outcome) => {
                            if (location.hash === shownOn) sayInstead(asked, outcome.text, !outcome.ok);
                          });
                        }
                      }),
                    },
                    (full ?? d).status === 'failed' ? 'Re-send' : 'Retry now',
                  ),
                  disabledWhy,
                )
              : null,
          ),
        ],
        panel: shown
          ? h(
              'div',
              { id: panelId, class: 'attempts', role: 'region', 'aria-label': `Attempts of ${d.id}` },
              full
                ? full.attempts?.length
                  ? full.attempts.map((a) => attemptView(d.id, a))
                  : h(
                      'p',
                      { class: 'muted' },
                      full.last_error === NOT_SENT_WHILE_DISABLED
                        ? 'Not attempted: the webhook was disabled when it was due. Enable it, then recover its deliveries.'
                        : 'No attempt yet.',
                    )
                : h('p', { class: 'muted' }, 'Loading…'),
            )
          : null,
      };
    });
    const filtered = Boolean(params.get('status') || params.get('event'));
    const built = table(
      'Deliveries, newest first',
      ['Delivery', 'Event', 'Status', 'Last response', 'Created', 'Attempts'],
      cells.map((c) => c.row),
      meta && meta.total > 0 && !cursor && pageNo > meta.total_pages
        ? h(
            'span',
            {},
            `There is no page ${pageNo}: the last is page ${meta.total_pages}. `,
            pager(meta.total_pages, 'Go to the last page'),
          )
        : filtered
          ? h(
              'span',
              {},
              'No deliveries match these filters. ',
              h('a', { href: `#/webhooks/${webhookId}` }, 'Show every delivery'),
            )
          : 'No deliveries yet: send a test above.',
    );
    // Each shown delivery's attempts in a full-width row under its own.
    const bodyRows = [...built.querySelectorAll('tbody > tr')];
    cells.forEach((c, i) => {
      if (!c.panel) return;
      const td = h('td', { role: 'cell', colspan: 6, class: 'attempts-cell' }, c.panel);
      bodyRows[i]?.after(h('tr', { role: 'row', class: 'attempts-row' }, td));
    });
    replace(listSlot, built);
    if (focused) listSlot.querySelector<HTMLElement>(`[data-focus="${CSS.escape(focused)}"]`)?.focus();
  };

  /** Reads the list again; `asked` by the developer (a click), a read held by a refusal says so. */
  const refresh = async (asked = false) => {
    const wait = polling.notBefore - Date.now();
    if (wait > 0) {
      if (asked) {
        readError = `The API asked to wait: the deliveries are read again in ${waitText(wait / 1000)}.`;
        announce(readError, true);
      }
      return;
    }
    const gen = ++generation;
    const started = Date.now();
    const shownError = readError;
    readError = undefined;
    // The subscription (its state and health: a 410 disabled it, the failures of the last 24 h,
    // the last delivery) is read with its deliveries when asked, or once its reading is
    // HEADER_EVERY_MS old; else after them, when the list shows a delivery that is new to the
    // page or changed status (a 410 may have disabled it). Each read counts on the account's
    // plan, as any client's does.
    const readHookNow = !hookJustRead && (asked || Date.now() - hookReadAt >= HEADER_EVERY_MS);
    const readHook = () => {
      hookReadAt = Date.now();
      return act(held(() => get<WebhookSubscription>(pathOf('getWebhook', { webhook_id: webhookId }))));
    };
    const [list, freshWithList] = await Promise.all([
      act(
        held(() =>
          call<Delivery[]>(
            'GET',
            `${pathOf('listWebhookDeliveries', { webhook_id: webhookId })}?${q.toString()}`,
          ),
        ),
      ),
      // (The page's first read has it from just now.)
      readHookNow ? readHook() : undefined,
    ]);
    const firstRead = hookJustRead;
    hookJustRead = false;
    // A delivery new to the page or with another status may have changed the subscription.
    const changed = list?.data.some((d) => shownStatus.get(d.id) !== d.status) ?? false;
    const fresh = freshWithList ?? (!firstRead && changed && list ? await readHook() : undefined);
    if (list) shownStatus = new Map(list.data.map((d) => [d.id, d.status]));
    if (fresh && gen === generation) showHook(fresh);
    if (!list) {
      // A refused read counts as a read: the next waits its gap (and any wait it was told).
      if (gen === generation) Object.assign(polling, { lastEnd: Date.now(), lastTook: Date.now() - started });
      return;
    }
    if (gen !== generation) return;
    const ids = new Set(list.data.map((d) => d.id));
    for (const id of open.keys()) if (!ids.has(id)) open.delete(id);
    await Promise.all(
      [...open.keys()].map(async (id) => {
        const full = await act(
          held(() => get<Delivery>(pathOf('getWebhookDelivery', { webhook_id: webhookId, delivery_id: id }))),
        );
        if (full) open.set(id, full);
      }),
    );
    if (gen !== generation) return;
    if (shownError && readError === undefined) unsay(shownError);
    const pendingDue = [...list.data, ...[...open.values()].flatMap((d) => (d ? [d] : []))]
      .filter((d) => d.status === 'pending')
      .map((d) => (d.next_attempt_at ? Date.parse(d.next_attempt_at) : Date.now()));
    const now = Date.now();
    Object.assign(polling, {
      dueAt: pendingDue.length ? Math.min(...pendingDue) : Number.POSITIVE_INFINITY,
      lastEnd: now,
      lastTook: now - started,
    });
    render(list.data, list.meta);
    const meta = list.meta;
    replace(
      pagerSlot,
      meta
        ? h(
            'p',
            {},
            // Walked by cursor, a page's place moves with each delivery made since: it is named
            // by its neighbours (Previous, Next, Newest), not by a number that would not hold.
            cursor
              ? `${howMany(meta.total)} in all, newest first. `
              : `Page ${meta.page} of ${Math.max(1, meta.total_pages)} (${howMany(meta.total)}) `,
            // Back by the list's cursor too: the rows come back as they were read.
            meta.prev_cursor
              ? pager({ cursor: meta.prev_cursor }, 'Previous')
              : meta.page > 1
                ? pager(meta.page - 1, 'Previous')
                : null,
            ' ',
            meta.next_cursor ? pager({ cursor: meta.next_cursor }, 'Next') : null,
            // A walk by cursor can always start again from the newest deliveries.
            cursor && meta.prev_cursor ? [' ', pager(1, 'Newest')] : null,
          )
        : null,
    );
    replace(
      liveNote,
      `Up to date as of ${fmtDate(new Date(now).toISOString())}.`,
      pendingDue.length ? ' Updates by itself while a delivery is pending, after its next attempt.' : '',
    );
  };
  /** The subscription as last read: its URL, state and health, description and events. */
  const header = h('dl', { class: 'detail card' });
  const showHook = (w: WebhookSubscription) => {
    disabledWhy =
      w.status === 'disabled' ? 'This webhook is disabled: enable it on the Webhooks page first.' : undefined;
    offer(testButton, disabledWhy);
    offer(recoverButton, disabledWhy);
    replace(
      header,
      h('dt', {}, 'Endpoint'),
      h('dd', {}, breakable(w.url)),
      h('dt', {}, 'Status'),
      h(
        'dd',
        {},
        webhookState(w),
        // The buttons it turns off say why only on hover: said where the state is too.
        disabledWhy
          ? h(
              'span',
              { class: 'muted block', 'data-disabled-note': '' },
              'Send test, Recover deliveries and Re-send are off until it is enabled on the Webhooks page.',
            )
          : null,
      ),
      ...(w.description ? [h('dt', {}, 'Description'), h('dd', {}, w.description)] : []),
      h('dt', {}, 'Events'),
      h('dd', {}, w.events.join(', ')),
    );
  };
  showHook(hook);
  /** A link to a page by its number (the newest, the last) or by the list's cursor (Previous, Next). */
  const pager = (to: number | { cursor: string }, label: string) => {
    const nq = new URLSearchParams(params);
    nq.delete('page');
    nq.delete('cursor');
    if (typeof to === 'number') {
      if (to > 1) nq.set('page', String(to));
    } else nq.set('cursor', to.cursor);
    return h('a', { href: `#/webhooks/${webhookId}?${nq.toString()}` }, label);
  };

  page(
    'Deliveries',
    h('p', {}, h('a', { href: '#/webhooks' }, '← Webhooks')),
    header,
    testForm,
    recoverForm,
    filters,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', onclick: () => void refresh(true) }, 'Refresh'),
    ),
    liveNote,
    listSlot,
    pagerSlot,
  );
  await refresh();
  every(2000, async () => {
    // Between reads, "in 7 s" counts down: a time that has come reads as the attempt it is.
    const now = Date.now();
    for (const el of listSlot.querySelectorAll<HTMLElement>('[data-due]'))
      el.textContent = dueNote(el.dataset.due ?? '', now);
    if (refreshDue(now, polling)) await refresh();
  });
}
