import type {
  ApiKeyView,
  Delivery,
  SignalDetail,
  SignalListItem,
  Statistics,
  UsageBucket,
  WebhookSubscription,
} from '@signal/contracts';
import { ApiError, SubmissionKey, call, del, get, patch, post, setCsrf } from './api.js';
import { usageChart } from './charts.js';
import {
  badge,
  checkboxGroup,
  checkedValues,
  confirmDialog,
  field,
  fmtDate,
  h,
  inputValue,
  replace,
  secretPanel,
  select,
  table,
} from './dom.js';

const SIGNAL_TYPES = ['new', '3d', '7d', '30d', 'wallet', 'premium'] as const;
const SIGNAL_STATUSES = ['active', 'winner', 'dead', 'rugged'] as const;
const WEBHOOK_EVENTS = ['signal.new', 'signal.winner', 'signal.dead', 'signal.rugged'] as const;

interface Plan {
  per_minute: number;
  per_day: number;
}
interface SessionInfo {
  account: { id: string; email: string; plan: Plan };
  csrf_token: string;
  expires_at: string;
}
type KeyRow = ApiKeyView & { status: 'active' | 'expired' | 'revoked' };
interface Usage {
  plan: Plan;
  subject: string;
  minutes: UsageBucket[];
  days: UsageBucket[];
}

const main = document.getElementById('main')!;
const statusEl = document.getElementById('status')!;
const nav = document.getElementById('nav')!;
const who = document.getElementById('who')!;
let session: SessionInfo | null = null;
let stopTimers: (() => void)[] = [];

function announce(message: string, isError = false): void {
  replace(statusEl, isError ? h('p', { class: 'error', role: 'alert' }, message) : h('p', {}, message));
}

function errorText(err: unknown): string {
  if (err instanceof ApiError) return `${err.message}${err.requestId ? ` (request ${err.requestId})` : ''}`;
  return 'Something went wrong.';
}

/** Runs an action, reports its outcome in the live region, and sends expired sessions to log in. */
async function act<T>(what: () => Promise<T>, done?: string): Promise<T | undefined> {
  try {
    const r = await what();
    if (done) announce(done);
    return r;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && location.hash !== '#/login') {
      session = null;
      announce('Your session has ended; please log in again.', true);
      location.hash = '#/login';
      return undefined;
    }
    announce(errorText(err), true);
    return undefined;
  }
}

/**
 * Handles a form's submissions one at a time: while one is in flight its submit buttons are
 * disabled and further submits (a double-click, Enter pressed twice) are ignored, so one
 * intent makes one request.
 */
function onSubmit(form: HTMLFormElement, handler: () => Promise<void>): void {
  let busy = false;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (busy) return;
    busy = true;
    const buttons = [...form.querySelectorAll<HTMLButtonElement>('button[type="submit"]')];
    for (const b of buttons) b.disabled = true;
    form.setAttribute('aria-busy', 'true');
    try {
      await handler();
    } finally {
      busy = false;
      for (const b of buttons) b.disabled = false;
      form.removeAttribute('aria-busy');
    }
  });
}

function page(title: string, ...children: (Node | null)[]): void {
  document.title = `${title} · Signal Service dashboard`;
  replace(main, h('h1', {}, title), ...children);
  main.focus();
  for (const a of nav.querySelectorAll('a')) {
    const current = a.getAttribute('href') === `#/${location.hash.split('/')[1] ?? ''}`;
    if (current) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function showChrome(): void {
  const signedIn = session !== null;
  nav.hidden = !signedIn;
  who.hidden = !signedIn;
  document.getElementById('who-email')!.textContent = session?.account.email ?? '';
}

// ---------------------------------------------------------------------------------------------
// Log in / sign up

async function authView(mode: 'login' | 'signup'): Promise<void> {
  const config = await act(() => get<{ signup_enabled: boolean }>('/v1/dashboard/config'));
  const canSignUp = config?.signup_enabled ?? false;
  if (mode === 'signup' && !canSignUp) {
    page(
      'Sign up',
      h('p', {}, 'Sign-up is closed on this installation; ask the operator for an account.'),
      h('p', {}, h('a', { href: '#/login' }, 'Log in')),
    );
    return;
  }
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'email', required: true });
  const password = h('input', {
    type: 'password',
    name: 'password',
    autocomplete: mode === 'login' ? 'current-password' : 'new-password',
    required: true,
    minlength: mode === 'signup' ? 12 : 1,
  });
  const form = h(
    'form',
    { class: 'card', novalidate: false },
    field('Email', email),
    field('Password', password, mode === 'signup' ? 'At least 12 characters.' : undefined),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit' }, mode === 'login' ? 'Log in' : 'Create account'),
    ),
  );
  onSubmit(form, async () => {
    const body = { email: email.value.trim(), password: password.value };
    const info = await act(() =>
      post<SessionInfo>(mode === 'login' ? '/v1/dashboard/session' : '/v1/dashboard/signup', body),
    );
    if (!info) return;
    session = info;
    setCsrf(info.csrf_token);
    showChrome();
    announce(mode === 'login' ? 'Logged in.' : 'Account created. Create your first API key below.');
    location.hash = '#/keys';
  });
  page(
    mode === 'login' ? 'Log in' : 'Sign up',
    form,
    mode === 'login'
      ? canSignUp
        ? h('p', {}, 'No account yet? ', h('a', { href: '#/signup' }, 'Sign up'))
        : null
      : h('p', {}, 'Have an account? ', h('a', { href: '#/login' }, 'Log in')),
  );
}

// ---------------------------------------------------------------------------------------------
// Profile → API settings

const OVERLAPS: [string, string][] = [
  ['0', 'Revoke the old key now'],
  ['3600', 'Keep the old key 1 hour'],
  ['86400', 'Keep the old key 24 hours'],
  ['604800', 'Keep the old key 7 days'],
];

async function keysView(): Promise<void> {
  const keys = (await act(() => get<KeyRow[]>('/v1/dashboard/keys'))) ?? [];
  const plan = session!.account.plan;
  const secretSlot = h('div', {});
  const showSecret = (key: string, keyName: string) => {
    replace(
      secretSlot,
      secretPanel(
        `New key “${keyName}”`,
        key,
        'Copy it now: it is shown only once. Use it as Authorization: Bearer <key>.',
        // Only the panel goes: the list is already fresh. (Re-rendering the whole view here raced
        // with what the developer did next: a revoke confirmed before that render's list arrived
        // was drawn over by the older list, showing the revoked key as active.)
        () => name.focus(),
      ),
    );
    secretSlot.querySelector('button')?.focus();
  };

  const name = h('input', {
    type: 'text',
    name: 'name',
    required: true,
    maxlength: 100,
    autocomplete: 'off',
  });
  const expires = h('input', { type: 'date', name: 'expires' });
  const create = h(
    'form',
    {},
    field('Key name', name, 'For example production or staging: one key per environment.'),
    field('Expires (optional)', expires, 'The key stops working at the start of this day (UTC).'),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Create key')),
  );
  const submission = new SubmissionKey();
  onSubmit(create, async () => {
    const body: { name: string; expires_at?: string } = { name: name.value.trim() };
    if (expires.value) body.expires_at = new Date(`${expires.value}T00:00:00Z`).toISOString();
    const idempotencyKey = submission.for(body);
    const created = await act(
      () => post<KeyRow & { key: string }>('/v1/dashboard/keys', body, { idempotencyKey }),
      'Key created.',
    );
    if (created) {
      submission.done();
      create.reset();
      showSecret(created.key, created.name);
      await refreshList();
    }
  });

  const listSlot = h('div', {});
  let listRequests = 0;
  const refreshList = async () => {
    const request = ++listRequests;
    const rows = await act(() => get<KeyRow[]>('/v1/dashboard/keys'));
    // An answer overtaken by a later refresh (or a failed one) does not replace the newer list.
    if (!rows || request !== listRequests) return;
    replace(listSlot, keyTable(rows));
    replace(usageSelect, ...usageOptions(rows));
  };
  const keyTable = (rows: KeyRow[]) =>
    table(
      'API keys',
      ['Name', 'Prefix', 'Created', 'Last used', 'Expires', 'Status', 'Actions'],
      rows.map((k) => [
        k.name,
        h('code', {}, `${k.prefix}…`),
        fmtDate(k.created_at),
        fmtDate(k.last_used_at),
        fmtDate(k.expires_at),
        badge(k.status),
        k.status === 'active'
          ? h(
              'div',
              { class: 'actions' },
              h(
                'button',
                {
                  type: 'button',
                  class: 'secondary',
                  'aria-label': `Roll key ${k.name}`,
                  onclick: () => void roll(k),
                },
                'Roll',
              ),
              h(
                'button',
                {
                  type: 'button',
                  class: 'danger',
                  'aria-label': `Revoke key ${k.name}`,
                  onclick: () => void revoke(k),
                },
                'Revoke',
              ),
            )
          : '—',
      ]),
    );
  const revoke = async (k: KeyRow) => {
    const ok = await confirmDialog(
      `Revoke “${k.name}”?`,
      h(
        'p',
        {},
        `Every request with ${k.prefix}… fails from now on, on every server. This cannot be undone.`,
      ),
      'Revoke key',
    );
    if (!ok) return;
    if (await act(() => del<KeyRow>(`/v1/dashboard/keys/${k.id}`), `Key “${k.name}” revoked.`))
      await refreshList();
  };
  const roll = async (k: KeyRow) => {
    const overlap = select('overlap', OVERLAPS, '86400');
    const ok = await confirmDialog(
      `Roll “${k.name}”?`,
      h('p', {}, 'A new key is created now. Deploy it, then the old key stops after the overlap you choose.'),
      'Roll key',
      field('Overlap', overlap),
    );
    if (!ok) return;
    const r = await act(
      () =>
        post<{ created: KeyRow & { key: string }; previous: KeyRow }>(`/v1/dashboard/keys/${k.id}/roll`, {
          overlap_seconds: Number(overlap.value),
        }),
      'Key rolled.',
    );
    if (r) {
      showSecret(r.created.key, r.created.name);
      await refreshList();
    }
  };

  const usageSelect = h('select', { name: 'usage-subject' });
  const usageOptions = (rows: KeyRow[]) => [
    h('option', { value: '' }, 'Whole account'),
    ...rows.map((k) => h('option', { value: k.id }, `${k.name} (${k.prefix}…)`)),
  ];
  replace(usageSelect, ...usageOptions(keys));
  const usageSlot = h('div', {});
  const loadUsage = async () => {
    const q = usageSelect.value ? `?key_id=${encodeURIComponent(usageSelect.value)}` : '';
    const u = await act(() => get<Usage>(`/v1/dashboard/usage${q}`));
    if (!u) return;
    const time = (iso: string) =>
      new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
    const day = (iso: string) =>
      new Date(iso).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
    replace(
      usageSlot,
      h(
        'div',
        { class: 'grid' },
        usageChart('Requests per minute, last hour', u.minutes, time, u.plan.per_minute),
        usageChart('Requests per day, last 30 days', u.days, day, u.plan.per_day),
      ),
    );
  };
  usageSelect.addEventListener('change', () => void loadUsage());

  replace(listSlot, keyTable(keys));
  page(
    'API settings',
    secretSlot,
    h(
      'section',
      { 'aria-labelledby': 'plan-h' },
      h('h2', { id: 'plan-h' }, 'Plan'),
      h(
        'p',
        {},
        `${plan.per_minute} requests per minute and ${plan.per_day.toLocaleString()} per day, shared by all keys of this account. `,
        'Higher limits: contact the operator.',
      ),
    ),
    h('section', { 'aria-labelledby': 'keys-h' }, h('h2', { id: 'keys-h' }, 'Keys'), listSlot),
    h('section', { 'aria-labelledby': 'create-h' }, h('h2', { id: 'create-h' }, 'Create a key'), create),
    h(
      'section',
      { 'aria-labelledby': 'usage-h' },
      h('h2', { id: 'usage-h' }, 'Usage'),
      field('Show usage of', usageSelect),
      usageSlot,
    ),
  );
  await loadUsage();
}

// ---------------------------------------------------------------------------------------------
// Webhooks

function webhookForm(
  existing: WebhookSubscription | null,
  onSaved: (w: WebhookSubscription & { secret?: string }) => void,
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
    ),
  );
  const submission = new SubmissionKey();
  onSubmit(form, async () => {
    const events = checkedValues(form, 'events');
    const types = checkedValues(form, 'types');
    if (!events.length) return announce('Choose at least one event.', true);
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
          ? patch<WebhookSubscription>(`/v1/webhooks/${existing.id}`, body)
          : post<WebhookSubscription & { secret: string }>('/v1/webhooks', body, {
              idempotencyKey: submission.for(body),
            }),
      existing ? 'Webhook saved.' : 'Webhook created.',
    );
    if (saved) {
      submission.done();
      onSaved(saved);
    }
  });
  return form;
}

async function webhooksView(justCreated?: { secret: string }): Promise<void> {
  const hooks = (await act(() => get<WebhookSubscription[]>('/v1/webhooks'))) ?? [];
  const secretSlot = h('div', {});
  const editSlot = h('div', {});
  const showSecret = (secret: string, title: string) => {
    replace(
      secretSlot,
      secretPanel(
        title,
        secret,
        'Verify deliveries with it (see “Receiving webhooks” in the docs). It is shown only now.',
        () => undefined,
      ),
    );
    secretSlot.querySelector('button')?.focus();
  };
  const reload = () => webhooksView();
  const rows = hooks.map((w) => [
    h('span', { class: 'mono' }, w.url),
    w.events.join(', '),
    w.types ? w.types.join(', ') : 'all',
    badge(w.status),
    h(
      'div',
      { class: 'actions' },
      h('a', { href: `#/webhooks/${w.id}`, 'aria-label': `Deliveries of ${w.url}` }, 'Deliveries'),
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          'aria-label': `Send test to ${w.url}`,
          onclick: async () => {
            const d = await act(() => post<Delivery>(`/v1/webhooks/${w.id}/test`), 'Test event queued.');
            if (d) location.hash = `#/webhooks/${w.id}`;
          },
        },
        'Send test',
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          'aria-label': `Edit ${w.url}`,
          onclick: () => {
            replace(
              editSlot,
              h(
                'section',
                { 'aria-labelledby': 'edit-h' },
                h('h2', { id: 'edit-h' }, `Edit ${w.url}`),
                webhookForm(w, () => void reload()),
              ),
            );
            editSlot.querySelector('input')?.focus();
          },
        },
        'Edit',
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          'aria-label': `${w.status === 'enabled' ? 'Disable' : 'Enable'} ${w.url}`,
          onclick: async () => {
            const enabled = w.status !== 'enabled';
            if (
              await act(
                () => patch(`/v1/webhooks/${w.id}`, { enabled }),
                enabled ? 'Webhook enabled.' : 'Webhook disabled.',
              )
            )
              await reload();
          },
        },
        w.status === 'enabled' ? 'Disable' : 'Enable',
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          'aria-label': `Rotate secret of ${w.url}`,
          onclick: async () => {
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
              () => post<WebhookSubscription & { secret: string }>(`/v1/webhooks/${w.id}/rotate-secret`),
              'Secret rotated.',
            );
            if (r) showSecret(r.secret, 'New signing secret');
          },
        },
        'Rotate secret',
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          'aria-label': `Delete ${w.url}`,
          onclick: async () => {
            const ok = await confirmDialog(
              'Delete this webhook?',
              h('p', {}, `No more events go to ${w.url}. Its delivery log is deleted too.`),
              'Delete',
            );
            if (ok && (await act(() => del(`/v1/webhooks/${w.id}`), 'Webhook deleted.'))) await reload();
          },
        },
        'Delete',
      ),
    ),
  ]);
  page(
    'Webhooks',
    secretSlot,
    h(
      'section',
      { 'aria-labelledby': 'hooks-h' },
      h('h2', { id: 'hooks-h' }, 'Subscriptions'),
      table('Webhook subscriptions', ['URL', 'Events', 'Types', 'Status', 'Actions'], rows),
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
  if (justCreated) showSecret(justCreated.secret, 'Signing secret');
}

async function deliveriesView(webhookId: string): Promise<void> {
  const hook = await act(() => get<WebhookSubscription>(`/v1/webhooks/${encodeURIComponent(webhookId)}`));
  if (!hook) return;
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
  const event = h('input', {
    type: 'text',
    name: 'event',
    value: params.get('event') ?? '',
    placeholder: 'signal.new',
  });
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
    if (event.value.trim()) q.set('event', event.value.trim());
    location.hash = `#/webhooks/${webhookId}?${q.toString()}`;
  });
  const q = new URLSearchParams({ limit: '20', page: String(pageNo) });
  if (params.get('status')) q.set('status', params.get('status')!);
  if (params.get('event')) q.set('event', params.get('event')!);
  const list = await act(() =>
    call<Delivery[]>('GET', `/v1/webhooks/${webhookId}/deliveries?${q.toString()}`),
  );
  const deliveries = list?.data ?? [];
  const rows = deliveries.map((d) => {
    const attemptsSlot = h('div', {});
    const details = h('details', {}, h('summary', {}, `Attempts (${d.attempts_made})`), attemptsSlot);
    details.addEventListener('toggle', async () => {
      if (!details.open || attemptsSlot.childElementCount) return;
      const full = await act(() => get<Delivery>(`/v1/webhooks/${webhookId}/deliveries/${d.id}`));
      replace(
        attemptsSlot,
        table(
          `Attempts of ${d.id}`,
          ['#', 'Started', 'Status', 'Duration', 'Error'],
          (full?.attempts ?? []).map((a) => [
            a.attempt,
            fmtDate(a.started_at),
            a.status_code ?? '—',
            `${Math.round(a.duration_ms)} ms`,
            a.error ?? '—',
          ]),
        ),
      );
    });
    return [
      h('code', {}, d.id),
      d.event,
      badge(d.status),
      fmtDate(d.created_at),
      h(
        'div',
        {},
        details,
        d.status === 'failed'
          ? h(
              'button',
              {
                type: 'button',
                class: 'secondary',
                'aria-label': `Re-send delivery ${d.id}`,
                onclick: async () => {
                  if (
                    await act(
                      () => post(`/v1/webhooks/${webhookId}/deliveries/${d.id}/retry`),
                      'Delivery re-sent.',
                    )
                  )
                    await deliveriesView(webhookId);
                },
              },
              'Re-send',
            )
          : null,
      ),
    ];
  });
  const meta = list?.meta;
  const pager = (p: number, label: string) => {
    const nq = new URLSearchParams(params);
    nq.set('page', String(p));
    return h('a', { href: `#/webhooks/${webhookId}?${nq.toString()}` }, label);
  };
  page(
    'Deliveries',
    h(
      'p',
      {},
      h('a', { href: '#/webhooks' }, '← Webhooks'),
      ' · ',
      h('span', { class: 'mono' }, hook.url),
      ' ',
      badge(hook.status),
    ),
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          onclick: async () => {
            if (await act(() => post(`/v1/webhooks/${webhookId}/test`), 'Test event queued.'))
              setTimeout(() => void deliveriesView(webhookId), 800);
          },
        },
        'Send test',
      ),
      h(
        'button',
        { type: 'button', class: 'secondary', onclick: () => void deliveriesView(webhookId) },
        'Refresh',
      ),
    ),
    filters,
    table('Deliveries, newest first', ['Delivery', 'Event', 'Status', 'Created', 'Attempts'], rows),
    meta
      ? h(
          'p',
          {},
          `Page ${meta.page} of ${Math.max(1, meta.total_pages)} (${meta.total} deliveries) `,
          meta.page > 1 ? pager(meta.page - 1, 'Previous') : null,
          ' ',
          meta.page < meta.total_pages ? pager(meta.page + 1, 'Next') : null,
        )
      : null,
  );
}

// ---------------------------------------------------------------------------------------------
// Signals and stats

async function signalsView(): Promise<void> {
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
  const filters = h(
    'form',
    { class: 'card', 'aria-label': 'Filter signals' },
    h('div', { class: 'grid' }, field('Type', type), field('Status', status), field('Created after', since)),
    h('label', {}, live, ' Live (refresh every 10 seconds)'),
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
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Load more');
  let cursor: string | null = null;
  let rows: SignalListItem[] = [];
  const query = (c: string | null) => {
    const q = new URLSearchParams({ limit: '25' });
    if (params.get('type')) q.set('type', params.get('type')!);
    if (params.get('status')) q.set('status', params.get('status')!);
    if (params.get('since')) q.set('since', new Date(params.get('since')!).toISOString());
    if (c) q.set('cursor', c);
    return `/v1/signals?${q.toString()}`;
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
    if (!r) return;
    rows = append ? [...rows, ...r.data] : r.data;
    cursor = r.meta?.next_cursor ?? null;
    render(r.meta?.total ?? rows.length);
  };
  more.addEventListener('click', () => void load(true));
  const timer = setInterval(() => {
    if (live.checked && !document.hidden && rows.length <= 25) void load(false);
  }, 10_000);
  stopTimers.push(() => clearInterval(timer));
  page('Signals', filters, listSlot, more);
  await load(false);
}

async function signalView(id: string): Promise<void> {
  const s = await act(() => get<SignalDetail>(`/v1/signals/${encodeURIComponent(id)}`));
  if (!s) {
    page('Signal', h('p', {}, h('a', { href: '#/signals' }, '← Signals')));
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
      ...row('ROI / ATH ROI', `${s.performance.roi}% / ${s.performance.ath_roi}%`),
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

async function statsView(): Promise<void> {
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
  const s = await act(() => get<Statistics>(`/v1/stats?${q.toString()}`));
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
            card('win rate', `${s.win_rate.toFixed(1)} %`),
            card('average ROI', `${s.avg_roi.toFixed(1)} %`),
            card('best ROI', `${s.best_roi.toFixed(1)} %`),
          ),
          table(
            'By type',
            ['Type', 'Signals', 'Winners', 'Win rate'],
            Object.entries(s.by_type).map(([t, v]) => [t, v.total, v.winners, `${v.win_rate.toFixed(1)} %`]),
          ),
        )
      : null,
  );
}

// ---------------------------------------------------------------------------------------------
// Routing

async function route(): Promise<void> {
  for (const stop of stopTimers) stop();
  stopTimers = [];
  const [path] = location.hash.replace(/^#/, '').split('?');
  const parts = (path ?? '').split('/').filter(Boolean);
  if (!session && parts[0] !== 'login' && parts[0] !== 'signup') {
    const s = await get<SessionInfo>('/v1/dashboard/session').catch(() => null);
    if (s) {
      session = s;
      setCsrf(s.csrf_token);
    } else {
      location.hash = '#/login';
      return;
    }
  }
  showChrome();
  switch (parts[0]) {
    case 'login':
      return authView('login');
    case 'signup':
      return authView('signup');
    case 'webhooks':
      return parts[1] ? deliveriesView(parts[1]) : webhooksView();
    case 'signals':
      return parts[1] ? signalView(parts[1]) : signalsView();
    case 'stats':
      return statsView();
    default:
      return keysView();
  }
}

document.getElementById('logout')!.addEventListener('click', async () => {
  await act(() => del('/v1/dashboard/session'), 'Logged out.');
  session = null;
  showChrome();
  location.hash = '#/login';
});
window.addEventListener('hashchange', () => void route());
void route();
