/** Profile → API settings: the plan, the keys and their usage. */
import type { ApiKeyView } from '@signal/contracts';
import { SubmissionKey, SubmissionKeys, del, get, patch, post } from '../api.js';
import { usageChart } from '../charts.js';
import {
  badge,
  confirmDialog,
  field,
  fmtDate,
  fmtRelative,
  h,
  notRead,
  replace,
  secretPanel,
  select,
  table,
  timeEl,
  zoneName,
  localDay,
} from '../dom.js';
import {
  state,
  announce,
  act,
  offer,
  oneAtATime,
  every,
  onSubmit,
  page,
  type WindowLeft,
  type Usage,
} from '../shell.js';
import { pathOf } from '../generated/routes.js';

const OVERLAPS: [string, string][] = [
  ['0', 'Revoke the old key now'],
  ['3600', 'Keep the old key 1 hour'],
  ['86400', 'Keep the old key 24 hours'],
  ['604800', 'Keep the old key 7 days'],
];

/**
 * Why a key is not offered a roll, or undefined: one already rolled (`replaced_by`) and still
 * working through its overlap is refused a second roll (409 "already being rolled out"), unless
 * this page's roll of it went unanswered: asked again, it answers with the replacement it made,
 * secret included.
 */
function rollRefusal(k: ApiKeyView, rows: readonly ApiKeyView[], unanswered: boolean): string | undefined {
  if (!k.replaced_by || unanswered) return undefined;
  const replacement = rows.find((r) => r.id === k.replaced_by);
  // A replacement that no longer works (revoked, expired) replaces nothing: the key rolls again.
  if (replacement && replacement.status !== 'active') return undefined;
  return `Already being rolled out: roll its replacement${replacement ? ` (${replacement.prefix}…)` : ''} instead.`;
}

/** An API key's status for people: revoked, expired, or active with how long it has left. */
function keyState(k: ApiKeyView, rows: readonly ApiKeyView[]): HTMLElement {
  // A rolled key says what replaced it, in the row itself (not only in a button's tooltip).
  const replacement = k.replaced_by ? rows.find((r) => r.id === k.replaced_by) : undefined;
  const replaced = replacement
    ? h('span', { class: 'muted block' }, `replaced by ${replacement.prefix}…`)
    : null;
  if (k.status !== 'active' || !k.expires_at) return h('span', {}, badge(k.status), replaced);
  return h(
    'span',
    {},
    badge(k.status),
    h('span', { class: 'muted block' }, `expires ${fmtRelative(k.expires_at)}`),
    replaced,
  );
}

export async function keysView(): Promise<void> {
  // A read refused is said above the page, and in the list's place: never an empty list.
  const keys = await act(() => get<ApiKeyView[]>(pathOf('dashboardListKeys')));
  const plan = state.session!.account.plan;
  const secretSlot = h('div', {});
  const showSecret = (key: string, keyName: string) => {
    replace(
      secretSlot,
      secretPanel(
        `New key “${keyName}”`,
        key,
        // The example carries the key itself, so it runs as pasted; it lives only in this panel,
        // which goes with the key. The URL quoted: unquoted, zsh reads its `?` as a pattern and
        // runs nothing.
        [
          'Copy it now: it is shown only once. Send it as Authorization: Bearer <key>; try it with ',
          h('code', {}, `curl -H "Authorization: Bearer ${key}" "${location.origin}/v1/signals?limit=5"`),
        ],
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
      () => post<ApiKeyView & { key: string }>(pathOf('dashboardCreateKey'), body, { idempotencyKey }),
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
  /** The list as last drawn, to tell whether a background read changed anything. */
  let drawn = JSON.stringify(keys ?? null);
  /** `whenChanged`: a background read, drawn only when a key changed (a redraw costs focus). */
  const refreshList = async (whenChanged = false) => {
    const request = ++listRequests;
    const rows = await act(() => get<ApiKeyView[]>(pathOf('dashboardListKeys')));
    // A response overtaken by a later refresh (or a failed one) does not replace the newer list.
    if (!rows || request !== listRequests) return;
    const read = JSON.stringify(rows);
    if (whenChanged && read === drawn) return;
    drawn = read;
    replace(listSlot, keyTable(rows));
    const chosen = usageSelect.value;
    replace(usageSelect, ...usageOptions(rows, chosen));
  };
  const keyTable = (rows: ApiKeyView[]) =>
    table(
      'API keys',
      ['Name', 'Prefix', 'Created', 'Last used', 'Expires', 'Status', 'Actions'],
      rows.map((k) => [
        h('span', { class: 'free-text' }, k.name),
        h('code', {}, `${k.prefix}…`),
        timeEl(k.created_at),
        timeEl(k.last_used_at),
        timeEl(k.expires_at),
        keyState(k, rows),
        h(
          'div',
          { class: 'actions' },
          // Any key can be renamed (a revoked one's name is how its history is read).
          keyAction('Rename', k, 'secondary', rename),
          ...(k.status === 'active'
            ? [
                offer(
                  keyAction('Roll', k, 'secondary', roll),
                  rollRefusal(k, rows, rollKeys.of(k.id).pending() !== undefined),
                ),
                keyAction('Revoke', k, 'danger', revoke),
              ]
            : []),
        ),
      ]),
    );
  /** A key's action button, named for the key it acts on (its name and prefix). */
  const keyAction = (
    verb: 'Rename' | 'Roll' | 'Revoke',
    k: ApiKeyView,
    look: 'secondary' | 'danger',
    action: (k: ApiKeyView) => Promise<void>,
  ) =>
    h(
      'button',
      {
        type: 'button',
        class: look,
        'aria-label': `${verb} key ${k.name} (${k.prefix}…)`,
        onclick: oneAtATime(() => action(k)),
      },
      verb,
    );
  const rename = async (k: ApiKeyView) => {
    const input = h('input', {
      type: 'text',
      name: 'new-name',
      required: true,
      maxlength: 100,
      autocomplete: 'off',
      value: k.name,
    });
    const ok = await confirmDialog(
      `Rename “${k.name}” (${k.prefix}…)`,
      h('p', {}, 'Only the name changes: the key itself, its expiry and its status stay as they are.'),
      'Rename key',
      field('New name', input),
      'primary',
    );
    const newName = input.value.trim();
    if (!ok || newName === k.name) return;
    if (
      await act(
        () => patch<ApiKeyView>(pathOf('dashboardRenameKey', { key_id: k.id }), { name: newName }),
        `Key “${k.name}” renamed to “${newName}”.`,
      )
    )
      await refreshList();
  };
  const revoke = async (k: ApiKeyView) => {
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
    if (
      await act(
        () => del<ApiKeyView>(pathOf('dashboardRevokeKey', { key_id: k.id })),
        `Key “${k.name}” revoked.`,
      )
    )
      await refreshList();
  };
  /**
   * Each key's roll keeps its Idempotency-Key until it is answered: a roll whose answer was lost,
   * asked again, shows the replacement it made (a second roll would be refused, its secret unseen).
   * The dialog offers that roll's overlap again, so the repeat is the same request.
   */
  const rollKeys = new SubmissionKeys<{ overlap_seconds: number }>();
  const roll = async (k: ApiKeyView) => {
    const unanswered = rollKeys.of(k.id).pending();
    const overlap = select('overlap', OVERLAPS, String(unanswered?.overlap_seconds ?? 86400));
    const ok = await confirmDialog(
      `Roll “${k.name}” (${k.prefix}…)?`,
      h('p', {}, 'A new key is created now. Deploy it, then the old key stops after the overlap you choose.'),
      'Roll key',
      field('Overlap', overlap),
    );
    if (!ok) return;
    const body = { overlap_seconds: Number(overlap.value) };
    const key = rollKeys.of(k.id);
    const r = await act(() =>
      post<{ created: ApiKeyView & { key: string }; previous: ApiKeyView }>(
        pathOf('dashboardRollKey', { key_id: k.id }),
        body,
        { idempotencyKey: key.for(body) },
      ),
    );
    if (!r) {
      // Made or not, the list says: a replacement made before its answer was lost shows in it.
      await refreshList();
      return;
    }
    key.done();
    const old = r.previous;
    announce(
      old.status === 'active' && old.expires_at
        ? `Key rolled. The old key ${old.prefix}… keeps working until ${fmtDate(old.expires_at)} (${fmtRelative(old.expires_at)}); the new one is ${r.created.prefix}….`
        : `Key rolled. The old key ${old.prefix}… is revoked; the new one is ${r.created.prefix}….`,
    );
    showSecret(r.created.key, r.created.name);
    await refreshList();
  };

  const usageSelect = h('select', { name: 'usage-subject' });
  const usageOptions = (rows: ApiKeyView[], chosen = '') => [
    h('option', { value: '', selected: chosen === '' }, 'Whole account'),
    h(
      'option',
      { value: 'dashboard', selected: chosen === 'dashboard' },
      'This dashboard (session requests)',
    ),
    ...rows.map((k) => h('option', { value: k.id, selected: chosen === k.id }, `${k.name} (${k.prefix}…)`)),
  ];
  replace(usageSelect, ...usageOptions(keys ?? []));
  const leftSlot = h('div', { class: 'grid left' });
  const usageSlot = h('div', {});
  const updated = h('p', { class: 'muted' });
  let usageRequests = 0;
  const loadUsage = async () => {
    const request = ++usageRequests;
    const q = usageSelect.value ? `?key_id=${encodeURIComponent(usageSelect.value)}` : '';
    const u = await act(() => get<Usage>(`${pathOf('dashboardUsage')}${q}`));
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
        usageChart(`Requests per minute, last hour (${zoneName()} time)`, u.minutes, time, {
          limit: u.plan.per_minute,
          per: 'minute',
        }),
        usageChart('Requests per day, last 30 days (UTC days)', u.days, day, {
          limit: u.plan.per_day,
          per: 'day',
        }),
      ),
    );
    usageSlot.querySelectorAll('details').forEach((d, i) => {
      d.open = open[i] ?? false;
    });
    replace(updated, `Updated ${fmtDate(new Date().toISOString())}; updates every 5 seconds.`);
  };
  usageSelect.addEventListener('change', () => void loadUsage());

  replace(listSlot, keys ? keyTable(keys) : h('p', { class: 'muted' }, notRead('your keys')));
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
  // "Last used" is saved at most once a minute per key: the list is read again each minute while
  // the page is shown, and redrawn only when a key changed and the developer is not in it.
  every(60_000, async () => {
    if (!listSlot.contains(document.activeElement)) await refreshList(true);
  });
}
