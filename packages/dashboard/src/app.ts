import type {
  ApiKeyView,
  Delivery,
  SignalDetail,
  SignalListItem,
  Statistics,
  UsageBucket,
  WebhookSubscription,
} from '@signal/contracts';
import { ApiError, SubmissionKey, call, del, get, isRecord, patch, post, setCsrf } from './api.js';
import { usageChart } from './charts.js';
import {
  badge,
  breakable,
  checkboxGroup,
  checkedValues,
  clearFieldErrors,
  confirmDialog,
  field,
  fieldErrors,
  fmtDate,
  fmtRelative,
  h,
  inputValue,
  replace,
  secretPanel,
  select,
  table,
  timeEl,
  zoneName,
} from './dom.js';

const SIGNAL_TYPES = ['new', '3d', '7d', '30d', 'wallet', 'premium'] as const;
const SIGNAL_STATUSES = ['active', 'winner', 'dead', 'rugged'] as const;
const WEBHOOK_EVENTS = ['signal.new', 'signal.winner', 'signal.dead', 'signal.rugged'] as const;
/** Every event a delivery can carry: the subscribable ones and the test event. */
const DELIVERY_EVENTS = [...WEBHOOK_EVENTS, 'webhook.test'] as const;
type DeliveryAttempt = NonNullable<Delivery['attempts']>[number];

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
interface WindowLeft {
  limit: number;
  used: number;
  remaining: number;
  resets_at: string;
}
interface Usage {
  plan: Plan;
  subject: string;
  minutes: UsageBucket[];
  days: UsageBucket[];
  remaining: { minute: WindowLeft; day: WindowLeft };
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

/** A message for the page an action goes on to (the status line is cleared on every page change). */
let carried: { message: string; isError: boolean } | null = null;
function announceNext(message: string, isError = false): void {
  carried = { message, isError };
}

function errorText(err: unknown): string {
  if (err instanceof ApiError) return `${err.message}${err.requestId ? ` (request ${err.requestId})` : ''}`;
  // The page's own checks (no request made) say what to fix in their message.
  if (err instanceof Error && err.message) return err.message;
  return 'Something went wrong.';
}

/**
 * A refusal shown where the developer is looking: each refused field's message under its
 * control (focused), anything else in a box at the top of the form (scrolled into view) — never
 * both for one message, and never only at the top of a long page.
 */
function showFormError(form: HTMLFormElement, err: unknown): void {
  clearFieldErrors(form);
  let box = form.querySelector<HTMLElement>(':scope > .form-error');
  if (!box) {
    box = h('div', { class: 'form-error', role: 'alert', tabindex: -1 });
    form.prepend(box);
  }
  const marked = err instanceof ApiError ? fieldErrors(form, err.details) : undefined;
  if (marked) {
    replace(box);
    box.hidden = true;
    marked.focus();
    marked.scrollIntoView({ block: 'center' });
    return;
  }
  replace(box, errorText(err));
  box.hidden = false;
  box.focus();
  box.scrollIntoView({ block: 'nearest' });
}

function clearFormError(form: HTMLFormElement): void {
  clearFieldErrors(form);
  const box = form.querySelector<HTMLElement>(':scope > .form-error');
  if (box) {
    replace(box);
    box.hidden = true;
  }
}

/**
 * Runs an action, reports its outcome (in the status line, or in `form` when the action is a
 * form's), and sends expired sessions to log in.
 */
async function act<T>(what: () => Promise<T>, done?: string, form?: HTMLFormElement): Promise<T | undefined> {
  try {
    const r = await what();
    if (form) clearFormError(form);
    if (done) announce(done);
    return r;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && location.hash !== '#/login') {
      session = null;
      announceNext('Your session has ended; please log in again.', true);
      location.hash = '#/login';
      return undefined;
    }
    if (form) showFormError(form, err);
    else announce(errorText(err), true);
    return undefined;
  }
}

/** Runs `tick` every `ms` while the page is shown and visible; stopped when the page changes. */
function every(ms: number, tick: () => Promise<void> | void): void {
  let running = false;
  const timer = setInterval(() => {
    if (running || document.hidden) return;
    running = true;
    void Promise.resolve(tick()).finally(() => {
      running = false;
    });
  }, ms);
  stopTimers.push(() => clearInterval(timer));
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
    const info = await act(
      () => post<SessionInfo>(mode === 'login' ? '/v1/dashboard/session' : '/v1/dashboard/signup', body),
      undefined,
      form,
    );
    if (!info) return;
    session = info;
    setCsrf(info.csrf_token);
    showChrome();
    announceNext(mode === 'login' ? 'Logged in.' : 'Account created. Create your first API key below.');
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

/** A date input's value (YYYY-MM-DD) for the reader's local day `ms` falls in. */
function localDay(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** A datetime-local input's value for the reader's local time `ms` (to the minute). */
function localMinute(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${localDay(ms)}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** An API key's status for people: revoked, expired, or active with how long it has left. */
function keyState(k: KeyRow): HTMLElement {
  if (k.status !== 'active' || !k.expires_at) return badge(k.status);
  return h(
    'span',
    {},
    badge(k.status),
    h('span', { class: 'muted block' }, `expires ${fmtRelative(k.expires_at)}`),
  );
}

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
        // Only the panel goes: the list is already fresh. (Re-rendering the whole view here would
        // race with what the developer does next: a revoke confirmed before that render's list
        // arrives would be drawn over by the older list, showing the revoked key as active.)
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
  // The earliest day a key can stop is tomorrow: a past or present day would refuse it at once.
  const expires = h('input', { type: 'date', name: 'expires_at', min: localDay(Date.now() + 86_400_000) });
  const create = h(
    'form',
    {},
    field('Key name', name, 'For example production or staging: one key per environment.'),
    field(
      'Expires (optional)',
      expires,
      `The key stops working at the start of this day, ${zoneName()} time.`,
    ),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Create key')),
  );
  const submission = new SubmissionKey();
  onSubmit(create, async () => {
    const body: { name: string; expires_at?: string } = { name: name.value.trim() };
    // The day picked is a day of the reader's calendar: it starts at their midnight.
    if (expires.value) body.expires_at = new Date(`${expires.value}T00:00`).toISOString();
    const idempotencyKey = submission.for(body);
    const created = await act(
      () => post<KeyRow & { key: string }>('/v1/dashboard/keys', body, { idempotencyKey }),
      'Key created.',
      create,
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
    // A response overtaken by a later refresh (or a failed one) does not replace the newer list.
    if (!rows || request !== listRequests) return;
    replace(listSlot, keyTable(rows));
    const chosen = usageSelect.value;
    replace(usageSelect, ...usageOptions(rows, chosen));
  };
  const keyTable = (rows: KeyRow[]) =>
    table(
      'API keys',
      ['Name', 'Prefix', 'Created', 'Last used', 'Expires', 'Status', 'Actions'],
      rows.map((k) => [
        k.name,
        h('code', {}, `${k.prefix}…`),
        timeEl(k.created_at),
        timeEl(k.last_used_at),
        timeEl(k.expires_at),
        keyState(k),
        k.status === 'active'
          ? h(
              'div',
              { class: 'actions' },
              h(
                'button',
                {
                  type: 'button',
                  class: 'secondary',
                  'aria-label': `Roll key ${k.name} (${k.prefix}…)`,
                  onclick: () => void roll(k),
                },
                'Roll',
              ),
              h(
                'button',
                {
                  type: 'button',
                  class: 'danger',
                  'aria-label': `Revoke key ${k.name} (${k.prefix}…)`,
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
    const r = await act(() =>
      post<{ created: KeyRow & { key: string }; previous: KeyRow }>(`/v1/dashboard/keys/${k.id}/roll`, {
        overlap_seconds: Number(overlap.value),
      }),
    );
    if (r) {
      const old = r.previous;
      announce(
        old.status === 'active' && old.expires_at
          ? `Key rolled. The old key ${old.prefix}… keeps working until ${fmtDate(old.expires_at)} (${fmtRelative(old.expires_at)}); the new one is ${r.created.prefix}….`
          : `Key rolled. The old key ${old.prefix}… is revoked; the new one is ${r.created.prefix}….`,
      );
      showSecret(r.created.key, r.created.name);
      await refreshList();
    }
  };

  const usageSelect = h('select', { name: 'usage-subject' });
  const usageOptions = (rows: KeyRow[], chosen = '') => [
    h('option', { value: '', selected: chosen === '' }, 'Whole account'),
    h(
      'option',
      { value: 'dashboard', selected: chosen === 'dashboard' },
      'This dashboard (session requests)',
    ),
    ...rows.map((k) => h('option', { value: k.id, selected: chosen === k.id }, `${k.name} (${k.prefix}…)`)),
  ];
  replace(usageSelect, ...usageOptions(keys));
  const leftSlot = h('div', { class: 'grid left' });
  const usageSlot = h('div', {});
  const updated = h('p', { class: 'muted' });
  let usageRequests = 0;
  const loadUsage = async () => {
    const request = ++usageRequests;
    const q = usageSelect.value ? `?key_id=${encodeURIComponent(usageSelect.value)}` : '';
    const u = await act(() => get<Usage>(`/v1/dashboard/usage${q}`));
    if (!u || request !== usageRequests) return;
    const time = (iso: string) =>
      new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
    const day = (iso: string) =>
      new Date(iso).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
    const left = (label: string, w: WindowLeft) =>
      h(
        'div',
        { class: 'card', 'data-window': label },
        h('span', { class: 'stat' }, w.remaining.toLocaleString()),
        `left ${label} of ${w.limit.toLocaleString()} (${w.used.toLocaleString()} used; starts over ${fmtRelative(w.resets_at)}, at ${fmtDate(w.resets_at)})`,
      );
    replace(leftSlot, left('this minute', u.remaining.minute), left('today', u.remaining.day));
    // A redraw keeps the "Numbers" disclosures the developer opened.
    const open = [...usageSlot.querySelectorAll('details')].map((d) => d.open);
    replace(
      usageSlot,
      h(
        'div',
        { class: 'grid' },
        usageChart(`Requests per minute, last hour (${zoneName()} time)`, u.minutes, time, u.plan.per_minute),
        usageChart('Requests per day, last 30 days (UTC days)', u.days, day, u.plan.per_day),
      ),
    );
    usageSlot.querySelectorAll('details').forEach((d, i) => {
      d.open = open[i] ?? false;
    });
    replace(updated, `Updated ${fmtDate(new Date().toISOString())}; updates every 5 seconds.`);
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
        `${plan.per_minute} requests per minute and ${plan.per_day.toLocaleString()} per day, shared by all keys of this account and this dashboard. `,
        'Higher limits: contact the operator.',
      ),
      h('h3', {}, 'Left now (whole account)'),
      leftSlot,
    ),
    h('section', { 'aria-labelledby': 'keys-h' }, h('h2', { id: 'keys-h' }, 'Keys'), listSlot),
    h('section', { 'aria-labelledby': 'create-h' }, h('h2', { id: 'create-h' }, 'Create a key'), create),
    h(
      'section',
      { 'aria-labelledby': 'usage-h' },
      h('h2', { id: 'usage-h' }, 'Usage'),
      field('Show usage of', usageSelect),
      usageSlot,
      updated,
    ),
  );
  await loadUsage();
  every(5000, loadUsage);
}

// ---------------------------------------------------------------------------------------------
// Account

async function accountView(): Promise<void> {
  const current = h('input', {
    type: 'password',
    name: 'current_password',
    autocomplete: 'current-password',
    required: true,
  });
  const next = h('input', {
    type: 'password',
    name: 'new_password',
    autocomplete: 'new-password',
    required: true,
    minlength: 12,
  });
  const form = h(
    'form',
    {},
    field('Current password', current),
    field('New password', next, 'At least 12 characters.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Change password')),
  );
  onSubmit(form, async () => {
    const info = await act(
      () =>
        post<SessionInfo>('/v1/dashboard/password', {
          current_password: current.value,
          new_password: next.value,
        }),
      'Password changed. Every other session of this account has been logged out.',
      form,
    );
    if (!info) return;
    session = info;
    setCsrf(info.csrf_token);
    form.reset();
  });
  page(
    'Account',
    h(
      'section',
      { 'aria-labelledby': 'acct-h' },
      h('h2', { id: 'acct-h' }, 'Signed in as'),
      h('p', {}, session!.account.email),
    ),
    h('section', { 'aria-labelledby': 'pw-h' }, h('h2', { id: 'pw-h' }, 'Change password'), form),
  );
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
          ? patch<WebhookSubscription>(`/v1/webhooks/${existing.id}`, body)
          : post<WebhookSubscription & { secret: string }>('/v1/webhooks', body, {
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

/** A webhook's state, with the reason it is disabled when it is. */
function webhookState(w: WebhookSubscription): HTMLElement {
  return h(
    'span',
    {},
    badge(w.status),
    w.status === 'disabled' && w.disabled_reason
      ? h('span', { class: 'muted block' }, w.disabled_reason)
      : null,
  );
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
    h('div', {}, breakable(w.url), w.description ? h('span', { class: 'muted block' }, w.description) : null),
    w.events.join(', '),
    w.types ? w.types.join(', ') : 'all',
    webhookState(w),
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
            const d = await act(() => post<Delivery>(`/v1/webhooks/${w.id}/test`));
            if (!d) return;
            announceNext('Test event queued.');
            location.hash = `#/webhooks/${w.id}`;
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

/** A body as sent or received: pretty JSON when it is JSON, else as is; scrollable, focusable. */
function bodyBlock(label: string, body: string): HTMLElement {
  let text = body;
  try {
    text = JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    // not JSON: shown as received
  }
  return h('pre', { class: 'body', tabindex: 0, 'aria-label': label }, text === '' ? '(empty)' : text);
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
function attemptView(deliveryId: string, a: DeliveryAttempt): HTMLElement {
  const outcome = a.status_code !== null ? `HTTP ${a.status_code}` : (a.error ?? 'no response');
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
      a.error && a.status_code !== null ? ` · ${a.error}` : '',
    ),
    h('h4', {}, 'Request'),
    a.request
      ? [
          h('p', {}, 'POST ', breakable(a.request.url)),
          headerList(`Request headers of attempt ${a.attempt}`, a.request.headers),
          bodyBlock(`Request body of attempt ${a.attempt}`, a.request.body),
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
          bodyBlock(`Response body of attempt ${a.attempt}`, a.response.body),
          a.response.body_truncated
            ? h('p', { class: 'muted' }, 'The body went on: only its first 4 KB are kept.')
            : null,
        ]
      : h('p', { class: 'muted' }, `No response (${a.error ?? 'none'}).`),
  );
}

/** A delivery's state for people: pending ones say when their next attempt is. */
function deliveryState(d: Delivery): HTMLElement {
  return h(
    'span',
    {},
    badge(d.status),
    d.status === 'pending' && d.next_attempt_at
      ? h(
          'span',
          { class: 'muted block' },
          'next attempt ',
          timeEl(d.next_attempt_at),
          ` (${fmtRelative(d.next_attempt_at)})`,
        )
      : null,
  );
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

  // Until when the list refreshes itself though nothing is pending (a test or recovery just queued).
  let liveUntil = 0;
  const testEvent = select(
    'event',
    DELIVERY_EVENTS.map((e): [string, string] => [e, e]),
    'webhook.test',
  );
  const testForm = h(
    'form',
    { class: 'card', 'aria-label': 'Send a test event' },
    field('Test event', testEvent, 'A sample payload in this event’s shape, marked "test": true.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Send test')),
  );
  onSubmit(testForm, async () => {
    const chosen = testEvent.value;
    const d = await act(
      () => post<Delivery>(`/v1/webhooks/${webhookId}/test`, { event: chosen }),
      `Test ${chosen} queued.`,
      testForm,
    );
    if (!d) return;
    liveUntil = Date.now() + 15_000;
    await refresh();
  });

  const since = h('input', {
    type: 'datetime-local',
    name: 'since',
    required: true,
    value: localMinute(Date.now() - 86_400_000),
  });
  const recoverForm = h(
    'form',
    { class: 'card', 'aria-label': 'Recover failed deliveries' },
    field(
      'Re-send every delivery that failed, created since',
      since,
      `Your time zone: ${zoneName()}. Each failed delivery gets one more attempt; asking again queues none twice.`,
    ),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Recover failed deliveries')),
  );
  onSubmit(recoverForm, async () => {
    const at = new Date(since.value);
    if (Number.isNaN(at.getTime())) return showFormError(recoverForm, new Error('Choose a date and time.'));
    const r = await act(
      () =>
        post<{ since: string; queued: number }>(`/v1/webhooks/${webhookId}/recover`, {
          since: at.toISOString(),
        }),
      undefined,
      recoverForm,
    );
    if (!r) return;
    announce(
      r.queued === 0
        ? `No failed deliveries since ${fmtDate(r.since)}: nothing queued.`
        : `${r.queued} failed deliver${r.queued === 1 ? 'y' : 'ies'} since ${fmtDate(r.since)} queued again.`,
    );
    liveUntil = Date.now() + 15_000;
    await refresh();
  });

  const q = new URLSearchParams({ limit: '20', page: String(pageNo) });
  if (params.get('status')) q.set('status', params.get('status')!);
  if (params.get('event')) q.set('event', params.get('event')!);
  const listSlot = h('div', {});
  const pagerSlot = h('div', {});
  const liveNote = h('p', { class: 'muted' });
  /** Deliveries whose attempts are shown, with their last detail. */
  const open = new Map<string, Delivery | undefined>();
  let generation = 0;
  /**
   * When the list is read again by itself: soon after the next pending attempt is due (2 s at
   * the earliest, 30 s at the latest), never while nothing is pending. The page reads through
   * the account's plan like any client, so it does not poll a delivery whose next attempt is
   * minutes away every 2 seconds.
   */
  let nextPollAt = Number.POSITIVE_INFINITY;

  const render = (deliveries: Delivery[]) => {
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
            await refresh();
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
          timeEl(d.created_at),
          h(
            'div',
            { class: 'actions' },
            toggle,
            (full ?? d).status === 'failed'
              ? h(
                  'button',
                  {
                    type: 'button',
                    class: 'secondary',
                    'data-focus': `resend:${d.id}`,
                    'aria-label': `Re-send delivery ${d.id}`,
                    onclick: async () => {
                      if (
                        await act(
                          () => post(`/v1/webhooks/${webhookId}/deliveries/${d.id}/retry`),
                          'Delivery re-sent.',
                        )
                      ) {
                        liveUntil = Date.now() + 15_000;
                        await refresh();
                      }
                    },
                  },
                  'Re-send',
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
                  : h('p', { class: 'muted' }, 'No attempt yet.')
                : h('p', { class: 'muted' }, 'Loading…'),
            )
          : null,
      };
    });
    const built = table(
      'Deliveries, newest first',
      ['Delivery', 'Event', 'Status', 'Created', 'Attempts'],
      cells.map((c) => c.row),
    );
    // Each shown delivery's attempts in a full-width row under its own.
    const bodyRows = [...built.querySelectorAll('tbody > tr')];
    cells.forEach((c, i) => {
      if (!c.panel) return;
      const td = h('td', { role: 'cell', colspan: 5, class: 'attempts-cell' }, c.panel);
      bodyRows[i]?.after(h('tr', { role: 'row', class: 'attempts-row' }, td));
    });
    replace(listSlot, built);
    if (focused) listSlot.querySelector<HTMLElement>(`[data-focus="${CSS.escape(focused)}"]`)?.focus();
  };

  const refresh = async () => {
    const gen = ++generation;
    const list = await act(() =>
      call<Delivery[]>('GET', `/v1/webhooks/${webhookId}/deliveries?${q.toString()}`),
    );
    if (!list || gen !== generation) return;
    const ids = new Set(list.data.map((d) => d.id));
    for (const id of open.keys()) if (!ids.has(id)) open.delete(id);
    await Promise.all(
      [...open.keys()].map(async (id) => {
        const full = await act(() => get<Delivery>(`/v1/webhooks/${webhookId}/deliveries/${id}`));
        if (full) open.set(id, full);
      }),
    );
    if (gen !== generation) return;
    const pendingDue = [...list.data, ...[...open.values()].flatMap((d) => (d ? [d] : []))]
      .filter((d) => d.status === 'pending')
      .map((d) => (d.next_attempt_at ? Date.parse(d.next_attempt_at) : Date.now()));
    const now = Date.now();
    nextPollAt = pendingDue.length
      ? Math.min(now + 30_000, Math.max(now + 2000, Math.min(...pendingDue) + 1000))
      : Number.POSITIVE_INFINITY;
    render(list.data);
    const meta = list.meta;
    replace(
      pagerSlot,
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
    replace(
      liveNote,
      `Up to date as of ${fmtDate(new Date(now).toISOString())}.`,
      pendingDue.length ? ' Updates by itself while a delivery is pending, after its next attempt.' : '',
    );
  };
  const pager = (p: number, label: string) => {
    const nq = new URLSearchParams(params);
    nq.set('page', String(p));
    return h('a', { href: `#/webhooks/${webhookId}?${nq.toString()}` }, label);
  };

  page(
    'Deliveries',
    h('p', {}, h('a', { href: '#/webhooks' }, '← Webhooks')),
    h(
      'dl',
      { class: 'detail card' },
      h('dt', {}, 'Endpoint'),
      h('dd', {}, breakable(hook.url)),
      h('dt', {}, 'Status'),
      h('dd', {}, webhookState(hook)),
      ...(hook.description ? [h('dt', {}, 'Description'), h('dd', {}, hook.description)] : []),
      h('dt', {}, 'Events'),
      h('dd', {}, hook.events.join(', ')),
    ),
    testForm,
    recoverForm,
    filters,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', onclick: () => void refresh() }, 'Refresh'),
    ),
    liveNote,
    listSlot,
    pagerSlot,
  );
  await refresh();
  every(2000, async () => {
    if (Date.now() >= nextPollAt || Date.now() < liveUntil) await refresh();
  });
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
    total = r.meta?.total ?? rows.length;
    render(total);
  };
  more.addEventListener('click', () => void load(true));
  // Live: the signal stream (GET /v1/signals/stream), not polling. Opening it is one request of
  // the plan and its events cost nothing; EventSource reconnects and resumes from the last event
  // id by itself. A new signal becomes a row, a status change updates its row, a `reset` (the
  // stream could not resume) reads the list again.
  let stream: EventSource | undefined;
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
    if (at >= 0) rows[at] = { ...rows[at]!, performance: event.row.performance };
    else if (name === 'signal.new' && matchesFilters(event.row, params)) {
      rows = [event.row, ...rows];
      total += 1;
    } else return;
    render(total);
  };
  const openStream = () => {
    const q = new URLSearchParams({ events: WEBHOOK_EVENTS.join(',') });
    if (params.get('type')) q.set('type', params.get('type')!);
    stream = new EventSource(`/v1/signals/stream?${q.toString()}`);
    liveState.textContent = '(connecting…)';
    stream.addEventListener('open', () => (liveState.textContent = '(connected)'));
    stream.addEventListener('error', (ev) => {
      // A connection that failed (EventSource retries by itself), not the stream's own `error`.
      if (!(ev instanceof MessageEvent)) liveState.textContent = '(reconnecting…)';
    });
    for (const name of WEBHOOK_EVENTS)
      stream.addEventListener(name, (ev: MessageEvent<string>) => onEvent(name, ev));
    stream.addEventListener('reset', () => void load(false));
  };
  const closeStream = () => {
    stream?.close();
    stream = undefined;
    liveState.textContent = '';
  };
  live.addEventListener('change', () => (live.checked ? openStream() : closeStream()));
  stopTimers.push(closeStream);
  page('Signals', filters, listSlot, more);
  if (live.checked) openStream();
  await load(false);
  const early = waiting;
  waiting = undefined;
  for (const [name, ev] of early) onEvent(name, ev);
}

const numberIn = (o: Record<string, unknown>, k: string): number => (typeof o[k] === 'number' ? o[k] : 0);
const textIn = (o: Record<string, unknown>, k: string): string => (typeof o[k] === 'string' ? o[k] : '');

/** A stream event's signal as a list row (the webhook payload: the signal as it is now), or nothing. */
function streamEvent(name: string, text: string): { row: SignalListItem } | undefined {
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
  // A message belongs to the page it was said on; one meant for this page was carried here.
  replace(statusEl);
  if (carried) {
    announce(carried.message, carried.isError);
    carried = null;
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
    case 'account':
      return accountView();
    default:
      return keysView();
  }
}

document.getElementById('logout')!.addEventListener('click', async () => {
  await act(() => del('/v1/dashboard/session'));
  announceNext('Logged out.');
  session = null;
  showChrome();
  location.hash = '#/login';
});
window.addEventListener('hashchange', () => void route());
void route();
