/**
 * What every page shares: the page's frame (title, status line, navigation), the signed-in
 * session, and how an action reports its outcome.
 */
import type { Delivery, UsageBucket } from '@signal/contracts';
import { ApiError, refusalText } from './api.js';
import { clearFieldErrors, fieldErrors, h, replace } from './dom.js';

export const SIGNAL_TYPES = ['new', '3d', '7d', '30d', 'wallet', 'premium'] as const;
export const SIGNAL_STATUSES = ['active', 'winner', 'dead', 'rugged'] as const;
export const WEBHOOK_EVENTS = ['signal.new', 'signal.winner', 'signal.dead', 'signal.rugged'] as const;
/** Every event a delivery can carry: the subscribable ones and the test event. */
export const DELIVERY_EVENTS = [...WEBHOOK_EVENTS, 'webhook.test'] as const;
export type DeliveryAttempt = NonNullable<Delivery['attempts']>[number];

export interface Plan {
  per_minute: number;
  per_day: number;
}
export interface SessionInfo {
  account: { id: string; email: string; plan: Plan };
  csrf_token: string;
  expires_at: string;
}
export interface WindowLeft {
  limit: number;
  used: number;
  remaining: number;
  resets_at: string;
}
export interface Usage {
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
/** The signed-in session (null until the router reads it or a log-in makes it). */
export const state: { session: SessionInfo | null } = { session: null };

const AUTH_PAGE = /^#\/(login|signup)(?:[?/]|$)/;

/**
 * Sends the browser to log in, keeping the page it was on (`#/login?next=…`): a session that
 * ended mid-task, or a link to a delivery opened logged out, leads back there after logging in
 * rather than to API keys.
 */
export function goToLogin(): void {
  const here = location.hash;
  if (AUTH_PAGE.test(here)) return;
  const back = here.length > 2 ? `?next=${encodeURIComponent(here.slice(1))}` : '';
  location.hash = `#/login${back}`;
}

/** Where logging in leads: the dashboard page `goToLogin` kept (only a page of this app), else API keys. */
export function pageAfterLogin(): string {
  const next = new URLSearchParams(location.hash.split('?')[1] ?? '').get('next');
  // A path of this app's hash routes (`/webhooks/…`), never `//host/…`, nor log in or sign up again.
  return next !== null && /^\/[a-z]/.test(next) && !AUTH_PAGE.test(`#${next}`) ? `#${next}` : '#/keys';
}

/** What stops when the page changes: its timers and streams. */
let stopTimers: (() => void)[] = [];

/** Registers something to stop when the page changes (a timer, a stream). */
export function onLeave(stop: () => void): void {
  stopTimers.push(stop);
}

/** Stops what the page shown registered (called by the router before the next page). */
export function leavePage(): void {
  for (const stop of stopTimers) stop();
  stopTimers = [];
}

/** Says `message` in the status line (an alert when it is an error), with `more` after it (a link). */
export function announce(message: string, isError = false, ...more: Node[]): void {
  const spaced = more.flatMap((n) => [' ', n]);
  replace(
    statusEl,
    isError
      ? h('p', { class: 'error', role: 'alert', 'data-message': message }, message, ...spaced)
      : h('p', { 'data-message': message }, message, ...spaced),
  );
}

/**
 * Clears the status line if it still says `message` (nothing since has replaced it), with the
 * buttons said beside it ("Connect now").
 */
export function unsay(message: string): void {
  if (statusEl.firstElementChild?.getAttribute('data-message') === message) replace(statusEl);
}

/**
 * Says `message` in place of `previous` if the status line still says it: an outcome learnt
 * later never covers what was said since (another action's answer).
 */
export function sayInstead(previous: string, message: string, isError = false): void {
  if (statusEl.firstElementChild?.getAttribute('data-message') === previous) announce(message, isError);
}

/** A message for the page an action goes on to (the status line is cleared on every page change). */
let carried: { message: string; isError: boolean } | null = null;
export function announceNext(message: string, isError = false): void {
  carried = { message, isError };
}

/** Clears the status line and says there what the previous page carried to this one. */
export function sayCarried(): void {
  replace(statusEl);
  if (carried) {
    announce(carried.message, carried.isError);
    carried = null;
  }
}

export function errorText(err: unknown): string {
  if (err instanceof ApiError) return refusalText(err);
  // The page's own checks (no request made) say what to fix in their message.
  if (err instanceof Error && err.message) return err.message;
  return 'Something went wrong.';
}

/**
 * A refusal shown where the developer is looking: each refused field's message under its
 * control (focused), anything else in a box at the top of the form (scrolled into view) — never
 * both for one message, and never only at the top of a long page.
 */
export function showFormError(form: HTMLFormElement, err: unknown): void {
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
 * form's), and sends expired sessions to log in. A form's refusal clears the status line: what
 * it said was an earlier action's outcome, and must not read as this one's.
 */
export async function act<T>(
  what: () => Promise<T>,
  done?: string,
  form?: HTMLFormElement,
): Promise<T | undefined> {
  try {
    const r = await what();
    if (form) clearFormError(form);
    if (done) announce(done);
    return r;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && !AUTH_PAGE.test(location.hash)) {
      state.session = null;
      announceNext('Your session has ended; please log in again.', true);
      goToLogin();
      return undefined;
    }
    if (form) {
      replace(statusEl);
      showFormError(form, err);
    } else announce(errorText(err), true);
    return undefined;
  }
}

/** Runs `tick` every `ms` while the page is shown and visible; stopped when the page changes. */
export function every(ms: number, tick: () => Promise<void> | void): void {
  let running = false;
  const timer = setInterval(() => {
    if (running || document.hidden) return;
    running = true;
    void Promise.resolve(tick()).finally(() => {
      running = false;
    });
  }, ms);
  onLeave(() => clearInterval(timer));
}

/**
 * Offers a button, or says why not: a button whose action the state shown can only have refused
 * (a test to a disabled webhook, a roll of a key already being rolled out) is disabled, with a
 * title saying why; `why` undefined offers it. A busy button given back stays as this left it.
 */
export function offer(button: HTMLButtonElement, why: string | undefined): HTMLButtonElement {
  button.disabled = why !== undefined;
  if (why === undefined) {
    button.removeAttribute('title');
    delete button.dataset.unavailable;
  } else {
    button.title = why;
    button.dataset.unavailable = why;
  }
  return button;
}

const usable = (b: HTMLButtonElement) => b.dataset.unavailable === undefined;

/**
 * Handles a form's submissions one at a time: while one is in flight its submit buttons are
 * disabled and further submits (a double-click, Enter pressed twice) are ignored, so one
 * intent makes one request.
 */
export function onSubmit(form: HTMLFormElement, handler: () => Promise<void>): void {
  let busy = false;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const buttons = [...form.querySelectorAll<HTMLButtonElement>('button[type="submit"]')];
    if (busy || (buttons.length > 0 && !buttons.some(usable))) return;
    busy = true;
    // The previous submission's refusal is not this one's: it goes until this one is answered.
    clearFormError(form);
    for (const b of buttons) b.disabled = true;
    form.setAttribute('aria-busy', 'true');
    try {
      await handler();
    } finally {
      busy = false;
      for (const b of buttons) b.disabled = !usable(b);
      form.removeAttribute('aria-busy');
    }
  });
}

/**
 * A button's click handler that runs one click at a time: while its action runs (the request and
 * what the page waits for after it) the button is disabled and marked busy, so a double click
 * acts once. Used for every button that changes something.
 */
export function oneAtATime(handler: () => Promise<void>): (ev: Event) => Promise<void> {
  let busy = false;
  return async (ev) => {
    if (busy) return;
    busy = true;
    const button = ev.currentTarget instanceof HTMLButtonElement ? ev.currentTarget : undefined;
    if (button) {
      button.disabled = true;
      button.setAttribute('aria-busy', 'true');
    }
    try {
      await handler();
    } finally {
      busy = false;
      if (button) {
        button.disabled = !usable(button);
        button.removeAttribute('aria-busy');
        // A disabled button loses the focus (a dialog it opened could not give it back): a
        // keyboard user is put back where they were, unless the focus has gone somewhere since.
        const focused = document.activeElement;
        if (button.isConnected && (focused === null || focused === document.body)) button.focus();
      }
    }
  };
}

/**
 * Whether the reader has moved from the page the document opened on. The first page leaves focus
 * where the browser put it, so the first Tab reaches the skip link; a page drawn after a move
 * takes focus to its main region, so a screen reader reads the new page from its top.
 */
let moved = false;
window.addEventListener('hashchange', () => (moved = true), { once: true });

export function page(title: string, ...children: (Node | null)[]): void {
  document.title = `${title} · Signal Service dashboard`;
  replace(main, h('h1', {}, title), ...children);
  // A page drawn anew starts at its top, not where the last one was scrolled to (the focus moves
  // to it without scrolling: focusing the main region scrolled it to the header's height).
  if (moved) main.focus({ preventScroll: true });
  window.scrollTo(0, 0);
  for (const a of nav.querySelectorAll('a')) {
    const current = a.getAttribute('href') === `#/${location.hash.split('/')[1] ?? ''}`;
    if (current) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

export function showChrome(): void {
  const signedIn = state.session !== null;
  nav.hidden = !signedIn;
  who.hidden = !signedIn;
  document.getElementById('who-email')!.textContent = state.session?.account.email ?? '';
}
