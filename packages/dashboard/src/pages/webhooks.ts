/** The webhook subscriptions: list, create, edit, test, rotate, delete. */
import type { Delivery, WebhookSubscription } from '@signal/contracts';
import { SubmissionKey, del, get, patch, post } from '../api.js';
import {
  badge,
  fmtClock,
  fmtDate,
  fmtRelative,
  timeEl,
  breakable,
  checkboxGroup,
  checkedValues,
  confirmDialog,
  field,
  h,
  inputValue,
  notRead,
  replace,
  secretPanel,
  table,
} from '../dom.js';
import { healthOf, lastResponseOf, outcomeText } from '../health.js';
import {
  SIGNAL_TYPES,
  WEBHOOK_EVENTS,
  announce,
  offer,
  showFormError,
  act,
  onSubmit,
  oneAtATime,
  page,
} from '../shell.js';
import { pathOf } from '../generated/routes.js';

function webhookForm(
  existing: WebhookSubscription | null,
  onSaved: (w: WebhookSubscription & { secret?: string }) => void,
  /** An edit can be left unsaved: a Cancel beside Save, which calls this and sends nothing. */
  onCancel?: () => void,
): HTMLFormElement {
  const url = h('input', {
    type: 'url',
    name: 'url',
    required: true,
    value: existing?.url ?? '',
    placeholder: 'https://example.com/hooks',
  });
  const description = h('input', {
    type: 'text',
    name: 'description',
    maxlength: 200,
    value: existing?.description ?? '',
  });
  const form = h(
    'form',
    {},
    field('Endpoint URL', url),
    checkboxGroup('Events', 'events', WEBHOOK_EVENTS, existing?.events ?? ['signal.new']),
    checkboxGroup('Signal types (none checked = every type)', 'types', SIGNAL_TYPES, existing?.types ?? []),
    field('Description (optional)', description),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit' }, existing ? 'Save changes' : 'Create webhook'),
      onCancel ? h('button', { type: 'button', class: 'secondary', onclick: onCancel }, 'Cancel') : null,
    ),
  );
  const submission = new SubmissionKey();
  onSubmit(form, async () => {
    const events = checkedValues(form, 'events');
    const types = checkedValues(form, 'types');
    if (!events.length) return showFormError(form, new Error('Choose at least one event.'));
    const body: Record<string, unknown> = { url: inputValue(form, 'url'), events };
    const desc = inputValue(form, 'description');
    if (existing) {
      body.types = types.length ? types : null;
      if (desc !== (existing.description ?? '')) body.description = desc;
    } else {
      if (types.length) body.types = types;
      if (desc) body.description = desc;
    }
    const saved = await act(
      () =>
        existing
          ? patch<WebhookSubscription>(pathOf('updateWebhook', { webhook_id: existing.id }), body)
          : post<WebhookSubscription & { secret: string }>(pathOf('createWebhook'), body, {
              idempotencyKey: submission.for(body),
            }),
      existing ? 'Webhook saved.' : 'Webhook created.',
      form,
    );
    if (saved) {
      submission.done();
      onSaved(saved);
    }
  });
  return form;
}

/**
 * A webhook's state and health: an enabled one whose deliveries fail says "failing" (not a green
 * "enabled"), since when and how often; then the last delivery's outcome, response and time.
 * Disabled ones give their reason.
 */
export function webhookState(w: WebhookSubscription): HTMLElement {
  const health = healthOf(w);
  const failing = w.status === 'enabled' && health?.failing_since != null;
  return h(
    'span',
    {},
    badge(failing ? 'failing' : w.status),
    w.status === 'disabled' && w.disabled_reason
      ? h('span', { class: 'muted block' }, w.disabled_reason)
      : null,
    health ? healthLines(health) : null,
  );
}

function healthLines(health: NonNullable<ReturnType<typeof healthOf>>): HTMLElement[] {
  const lines: HTMLElement[] = [];
  if (health.failing_since)
    lines.push(
      h(
        'span',
        { class: 'block' },
        'failing since ',
        timeEl(health.failing_since),
        ` (${fmtRelative(health.failing_since)})`,
      ),
    );
  if (health.failures_24h > 0)
    lines.push(
      h(
        'span',
        { class: 'block' },
        `${health.failures_24h.toLocaleString()} failed attempt${health.failures_24h === 1 ? '' : 's'} in the last 24 h`,
      ),
    );
  const response = outcomeText(health.last_response_status, health.last_error);
  lines.push(
    health.last_delivery_status && health.last_delivery_at
      ? h(
          'span',
          { class: 'muted block' },
          `last delivery ${health.last_delivery_status}${response ? ` (${response})` : ''} `,
          timeEl(health.last_delivery_at),
        )
      : h('span', { class: 'muted block' }, 'no delivery yet'),
  );
  return lines;
}

/**
 * Waits for the outcome of a delivery's next attempt (a test's first, or the one a retry or
 * re-send asked for: the attempt after the `attemptsBefore` it had), reading its detail once a
 * second for up to 20 s while the page stays: what to tell the developer once it is known, or
 * that it is still waiting. `what` names the attempt ("Test", "Retry", "Re-send").
 */
export async function attemptOutcome(
  webhookId: string,
  deliveryId: string,
  what: string,
  attemptsBefore = 0,
): Promise<{ text: string; ok: boolean }> {
  const shownOn = location.hash;
  for (let i = 0; i < 20 && location.hash === shownOn; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const d = await act(() =>
      get<Delivery>(pathOf('getWebhookDelivery', { webhook_id: webhookId, delivery_id: deliveryId })),
    );
    if (!d) break;
    // A retried delivery still reads as it was until its new attempt is recorded.
    if (d.attempts_made <= attemptsBefore && (attemptsBefore > 0 || d.status === 'pending')) continue;
    const response = lastResponseOf(d);
    if (d.status === 'succeeded')
      return { text: `${what} delivered: the endpoint answered ${response ?? 'with success'}.`, ok: true };
    if (d.status === 'failed')
      return {
        text: `${what} failed: ${response ?? 'no response'}; no more automatic attempts.`,
        ok: false,
      };
    return {
      // A clock time: the message stays, and a countdown in it would not count.
      text: `${what} not delivered yet: ${response ?? 'no response'}; it is retried${d.next_attempt_at ? ` at ${fmtClock(d.next_attempt_at)}` : ''}.`,
      ok: false,
    };
  }
  return { text: `${what} sent; no answer from the endpoint yet.`, ok: false };
}

/** Why a test to `w` can only be refused (409 while it is disabled), or nothing. */
const testRefusal = (w: WebhookSubscription) =>
  w.status === 'disabled' ? 'This webhook is disabled: enable it to send a test.' : undefined;

/** How often a shown Webhooks page reads its subscriptions' health again by itself. */
const HEALTH_REFRESH_MS = 10_000;
/** The shown Webhooks page's own refresh: one at a time, whichever view drew the page last. */
let healthTimer: ReturnType<typeof setInterval> | undefined;

/** The state cell of each shown subscription, redrawn from a fresh read of the list. */
async function redrawStates(cells: ReadonlyMap<string, HTMLElement>): Promise<WebhookSubscription[]> {
  const read = await get<WebhookSubscription[]>(pathOf('listWebhooks')).catch(() => undefined);
  if (read) showReadAt(Date.now());
  const fresh = read ?? [];
  for (const w of fresh) {
    const cell = cells.get(w.id);
    if (cell) replace(cell, webhookState(w));
    const test = document.querySelector<HTMLButtonElement>(`button[data-test-of="${CSS.escape(w.id)}"]`);
    if (test) offer(test, testRefusal(w));
  }
  return fresh;
}

/** The Webhooks page's line saying when its states were read (they update by themselves). */
const READ_AT_ID = 'hooks-read-at';
function showReadAt(at: number): void {
  const line = document.getElementById(READ_AT_ID);
  if (line)
    line.textContent = `Up to date as of ${fmtDate(new Date(at).toISOString())}; read again every ${HEALTH_REFRESH_MS / 1000} s. `;
}

/** The same line while the list has not been read (its read was refused): it is tried again. */
function showNotReadYet(): void {
  const line = document.getElementById(READ_AT_ID);
  if (line) line.textContent = `Not read: tried again every ${HEALTH_REFRESH_MS / 1000} s. `;
}

/**
 * After a test's outcome is known, its subscription's health follows within about a second (the
 * worker writes health in the background): the row is read again until its last delivery is
 * newer than the test, at most five times a second apart.
 */
async function redrawAfterTest(cells: ReadonlyMap<string, HTMLElement>, webhookId: string, sentAt: string) {
  for (let i = 0; i < 5; i++) {
    const fresh = await redrawStates(cells);
    const at = healthOf(fresh.find((w) => w.id === webhookId))?.last_delivery_at;
    if (at && Date.parse(at) >= Date.parse(sentAt)) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function webhooksView(justCreated?: { secret: string }): Promise<void> {
  // A read refused (a 429 while the account's minute is spent, the service down) is said by
  // `act` above the page; the page then says it could not read the list, never "no webhooks":
  // a developer who believed that would create them again.
  const read = await act(() => get<WebhookSubscription[]>(pathOf('listWebhooks')));
  const hooks = read ?? [];
  const stateCells = new Map<string, HTMLElement>();
  const shownOn = location.hash;
  if (healthTimer) clearInterval(healthTimer);
  healthTimer = setInterval(() => {
    if (location.hash !== shownOn) {
      clearInterval(healthTimer);
      healthTimer = undefined;
    } else if (read) void redrawStates(stateCells);
    // Not read yet: tried again quietly, and drawn whole once it is.
    else
      void get<WebhookSubscription[]>(pathOf('listWebhooks')).then(
        () => (location.hash === shownOn ? webhooksView() : undefined),
        () => undefined,
      );
  }, HEALTH_REFRESH_MS);
  const secretSlot = h('div', {});
  const editSlot = h('div', {});
  const showSecret = (secret: string, title: string) => {
    replace(
      secretSlot,
      secretPanel(
        title,
        secret,
        [
          'Verify deliveries with it (see ',
          h(
            'a',
            { href: '/docs/receiving-webhooks', target: '_blank', rel: 'noopener' },
            'Receiving webhooks',
          ),
          '). It is shown only now.',
        ],
        () => undefined,
      ),
    );
    secretSlot.querySelector('button')?.focus();
  };
  const reload = () => webhooksView();
  const rows = hooks.map((w) => {
    // A request whose answer never came is sent again with its key: the server answers as it did
    // the first time (one test, one new secret) instead of acting twice.
    const testKey = new SubmissionKey();
    const rotationKey = new SubmissionKey();
    const stateCell = h('div', {}, webhookState(w));
    stateCells.set(w.id, stateCell);
    const editButton = h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        'aria-label': `Edit ${w.url}`,
        onclick: () => {
          // Cancel closes the form unsaved and gives focus back to where the edit began.
          const cancel = () => {
            replace(editSlot);
            editButton.focus();
          };
          replace(
            editSlot,
            h(
              'section',
              { 'aria-labelledby': 'edit-h' },
              h('h2', { id: 'edit-h' }, `Edit ${w.url}`),
              webhookForm(w, () => void reload(), cancel),
            ),
          );
          editSlot.querySelector('input')?.focus();
        },
      },
      'Edit',
    );
    return [
      h(
        'div',
        {},
        breakable(w.url),
        w.description ? h('span', { class: 'muted block free-text' }, w.description) : null,
      ),
      w.events.join(', '),
      w.types ? w.types.join(', ') : 'all',
      stateCell,
      h(
        'div',
        { class: 'actions' },
        h('a', { href: `#/webhooks/${w.id}`, 'aria-label': `Deliveries of ${w.url}` }, 'Deliveries'),
        offer(
          h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              'data-test-of': w.id,
              'aria-label': `Send test to ${w.url}`,
              onclick: oneAtATime(async () => {
                const d = await act(() =>
                  post<Delivery>(pathOf('sendWebhookTest', { webhook_id: w.id }), undefined, {
                    idempotencyKey: testKey.for({}),
                  }),
                );
                if (!d) return;
                testKey.done();
                announce(`Test event sent to ${w.url}; waiting for its answer…`);
                const outcome = await attemptOutcome(w.id, d.id, 'Test');
                void redrawAfterTest(stateCells, w.id, d.created_at);
                announce(
                  outcome.text,
                  !outcome.ok,
                  h(
                    'a',
                    {
                      href: `#/webhooks/${w.id}?open=${encodeURIComponent(d.id)}`,
                      'aria-label': `Attempts of the test to ${w.url}`,
                    },
                    'See its attempts',
                  ),
                );
              }),
            },
            'Send test',
          ),
          testRefusal(w),
        ),
        editButton,
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            'aria-label': `${w.status === 'enabled' ? 'Disable' : 'Enable'} ${w.url}`,
            onclick: oneAtATime(async () => {
              const enabled = w.status !== 'enabled';
              const done = await act(
                () => patch(pathOf('updateWebhook', { webhook_id: w.id }), { enabled }),
                enabled ? undefined : 'Webhook disabled.',
              );
              if (!done) return;
              await reload();
              // What failed while it was off stays failed: enabling sends new events only, and
              // a developer who is not told so loses the rest without knowing.
              if (enabled)
                announce(
                  'Webhook enabled: new events are sent from now. Deliveries that failed while it was off are not sent again by themselves:',
                  false,
                  h('a', { href: `#/webhooks/${w.id}` }, 'recover them on its deliveries page'),
                );
            }),
          },
          w.status === 'enabled' ? 'Disable' : 'Enable',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            'aria-label': `Rotate secret of ${w.url}`,
            onclick: oneAtATime(async () => {
              const ok = await confirmDialog(
                'Rotate the signing secret?',
                h(
                  'p',
                  {},
                  'A new secret signs from now on; the old one keeps signing too for 24 hours, so you can switch without losing deliveries.',
                ),
                'Rotate',
              );
              if (!ok) return;
              const r = await act(
                () =>
                  post<WebhookSubscription & { secret: string }>(
                    pathOf('rotateWebhookSecret', { webhook_id: w.id }),
                    undefined,
                    { idempotencyKey: rotationKey.for({}) },
                  ),
                'Secret rotated.',
              );
              if (!r) return;
              rotationKey.done();
              showSecret(r.secret, 'New signing secret');
            }),
          },
          'Rotate secret',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Delete ${w.url}`,
            onclick: oneAtATime(async () => {
              const ok = await confirmDialog(
                'Delete this webhook?',
                h('p', {}, `No more events go to ${w.url}. Its delivery log is deleted too.`),
                'Delete',
              );
              if (
                ok &&
                (await act(() => del(pathOf('deleteWebhook', { webhook_id: w.id })), 'Webhook deleted.'))
              )
                await reload();
            }),
          },
          'Delete',
        ),
      ),
    ];
  });
  page(
    'Webhooks',
    secretSlot,
    h(
      'section',
      { 'aria-labelledby': 'hooks-h' },
      h('h2', { id: 'hooks-h' }, 'Subscriptions'),
      // A page left open shows its states' age, and can be read again at once.
      h(
        'p',
        { class: 'muted' },
        h('span', { id: READ_AT_ID }),
        h('button', { type: 'button', class: 'secondary', onclick: () => void webhooksView() }, 'Refresh'),
      ),
      table(
        'Webhook subscriptions',
        ['URL', 'Events', 'Types', 'Status', 'Actions'],
        rows,
        read ? 'No webhooks yet: create one below.' : notRead('your webhooks'),
      ),
    ),
    editSlot,
    h(
      'section',
      { 'aria-labelledby': 'newhook-h' },
      h('h2', { id: 'newhook-h' }, 'Create a webhook'),
      webhookForm(null, (w) => {
        void webhooksView('secret' in w && typeof w.secret === 'string' ? { secret: w.secret } : undefined);
      }),
    ),
  );
  if (read) showReadAt(Date.now());
  else showNotReadYet();
  if (justCreated) showSecret(justCreated.secret, 'Signing secret');
}
