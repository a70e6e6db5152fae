/** A tiny element builder: text is always set as text (never HTML), so nothing from the API can inject markup. */
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((ev: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, '').toLowerCase(), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: (Child | Child[])[]): void {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export function replace(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  append(el, children);
}

/**
 * A moment as the reader's clock shows it, to the second and with its zone: attempts seconds
 * apart must read apart, and a time without a zone is read in the wrong one.
 */
export function fmtDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime())
    ? '—'
    : d.toLocaleString(undefined, {
        year: 'numeric',
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        timeZoneName: 'short',
      });
}

/**
 * A moment of today as the reader's clock shows it, to the second: for a message that stays on
 * the page, where "in 9 s" would go on saying 9 s.
 */
export function fmtClock(iso: string): string {
  return new Date(iso).toLocaleTimeString(undefined, {
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
}

/** A date input's value (YYYY-MM-DD) for the reader's local day `ms` falls in. */
export function localDay(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** A datetime-local input's value for the reader's local time `ms` (to the minute). */
export function localMinute(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${localDay(ms)}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A <time> element: the moment in the reader's zone, the exact instant in `datetime`. */
export function timeEl(iso: string | null | undefined): HTMLElement | string {
  return iso ? h('time', { datetime: iso }, fmtDate(iso)) : '—';
}

/** The reader's time zone, named (for hints: "start of this day, Europe/Berlin time"). */
export function zoneName(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'local';
}

export { fmtRelative } from './relative.js';

/**
 * A URL or an id that may break only after its separators (/ . ? & = - _ :), never inside a
 * word, so a narrow screen wraps `https://example.com/hooks` at `/`, not between letters.
 */
export function breakable(text: string, tag: 'span' | 'code' = 'span'): HTMLElement {
  const el = h(tag, { class: 'mono' });
  for (const part of text.split(/(?<=[/.?&=\-_:])/)) {
    el.appendChild(document.createTextNode(part));
    el.appendChild(document.createElement('wbr'));
  }
  el.lastChild?.remove();
  return el;
}

export function badge(text: string): HTMLElement {
  return h('span', { class: `badge ${text}` }, text);
}

/**
 * What a list the page could not read says in its place (the refusal itself is said above the
 * page): never "nothing yet", which would be read as the account's state.
 */
export const notRead = (what: string): string =>
  `Could not read ${what} (the message above says why): this is not an empty list.`;

/**
 * A data table. Below 600 px each row becomes a card (CSS) with each cell labelled by its
 * column (data-label); the explicit ARIA roles keep the table semantics that `display` changes
 * would otherwise strip in some browsers.
 */
export function table(
  caption: string,
  headers: string[],
  rows: Child[][],
  /** What an empty table says (a filtered list says that nothing matches, not "nothing yet"). */
  empty: Child = 'Nothing yet.',
): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'stack', role: 'table' },
      h('caption', {}, caption),
      h(
        'thead',
        { role: 'rowgroup' },
        h(
          'tr',
          { role: 'row' },
          headers.map((t) => h('th', { scope: 'col', role: 'columnheader' }, t)),
        ),
      ),
      h(
        'tbody',
        { role: 'rowgroup' },
        rows.length
          ? rows.map((r) =>
              h(
                'tr',
                { role: 'row' },
                r.map((c, i) =>
                  h(
                    'td',
                    {
                      role: 'cell',
                      'data-label': headers[i],
                    },
                    c,
                  ),
                ),
              ),
            )
          : h(
              'tr',
              { role: 'row' },
              h('td', { role: 'cell', colspan: headers.length, class: 'muted' }, empty),
            ),
      ),
    ),
  );
}

/**
 * A labelled form control; the id ties label and input together. The hint sits under the
 * control, and so does the control's error when the server refuses its value (fieldErrors).
 */
export function field(
  label: string,
  control: HTMLInputElement | HTMLSelectElement,
  hint?: string,
): HTMLElement {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  const hintEl = hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  const errorEl = h('p', { class: 'field-error', id: `${id}-error`, hidden: true });
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hintEl, errorEl);
}

/** Clears what fieldErrors showed in a form. */
export function clearFieldErrors(form: HTMLFormElement): void {
  for (const e of form.querySelectorAll<HTMLElement>('.field-error')) {
    e.hidden = true;
    e.textContent = '';
  }
  for (const c of form.querySelectorAll('[aria-invalid]')) unmark(form, c);
}

/** A control no longer refused: its message gone, described by its hint alone again. */
function unmark(form: HTMLFormElement, control: Element): void {
  const errorEl = control.id ? form.querySelector<HTMLElement>(`[id="${control.id}-error"]`) : null;
  if (errorEl) {
    errorEl.hidden = true;
    errorEl.textContent = '';
  }
  control.removeAttribute('aria-invalid');
  const hint = control.id ? `${control.id}-hint` : '';
  if (form.querySelector(`[id="${hint}"]`)) control.setAttribute('aria-describedby', hint);
  else control.removeAttribute('aria-describedby');
}

/** A control's label as the form shows it, without a note in brackets ("Expires (optional)"). */
function labelOf(form: HTMLFormElement, control: HTMLElement): string | undefined {
  const text = form.querySelector(`label[for="${CSS.escape(control.id)}"]`)?.textContent;
  return text?.replace(/\s*\(.*\)\s*$/, '').trim() || undefined;
}

/**
 * Shows each refused field's message under its control (controls are found by name); returns
 * the first control marked, or undefined when no detail named a control of this form.
 */
export function fieldErrors(
  form: HTMLFormElement,
  details: readonly { field: string; message: string }[],
): HTMLElement | undefined {
  let first: HTMLElement | undefined;
  for (const d of details) {
    const name = d.field.replace(/^body\./, '');
    const control = form.querySelector<HTMLInputElement | HTMLSelectElement>(`[name="${CSS.escape(name)}"]`);
    const errorEl = control?.id ? form.querySelector<HTMLElement>(`[id="${control.id}-error"]`) : null;
    if (!control || !errorEl) continue;
    // Said with the field's label as the form shows it ("Endpoint URL", not the API's `url`): a
    // message naming its field takes the label in the name's place, a fragment ("must be in the
    // future") takes it in front, and a sentence of its own ("This is not the current
    // password.") reads as is.
    const label = labelOf(form, control) ?? name;
    errorEl.textContent = d.message.startsWith(`${name} `)
      ? `${label}${d.message.slice(name.length)}`
      : /^[a-z]/.test(d.message)
        ? `${label} ${d.message}`
        : d.message;
    errorEl.hidden = false;
    control.setAttribute('aria-invalid', 'true');
    const hint = form.querySelector(`[id="${control.id}-hint"]`) ? `${control.id}-hint ` : '';
    control.setAttribute('aria-describedby', `${hint}${errorEl.id}`);
    // The message is about what the field held: once it is edited, it no longer says what to fix.
    control.addEventListener('input', () => unmark(form, control), { once: true });
    first ??= control;
  }
  return first;
}

export function select(name: string, options: [string, string][], value = ''): HTMLSelectElement {
  return h(
    'select',
    { name },
    options.map(([v, t]) => h('option', { value: v, selected: v === value }, t)),
  );
}

export function checkboxGroup(
  legend: string,
  name: string,
  values: readonly string[],
  checked: readonly string[],
): HTMLFieldSetElement {
  return h(
    'fieldset',
    {},
    h('legend', {}, legend),
    values.map((v) =>
      h('label', {}, h('input', { type: 'checkbox', name, value: v, checked: checked.includes(v) }), v),
    ),
  );
}

export function checkedValues(form: HTMLFormElement, name: string): string[] {
  return [...form.querySelectorAll<HTMLInputElement>(`input[name="${name}"]:checked`)].map((i) => i.value);
}

export function inputValue(form: HTMLFormElement, name: string): string {
  const el = form.elements.namedItem(name);
  return el instanceof HTMLInputElement || el instanceof HTMLSelectElement ? el.value.trim() : '';
}

/** Asks for confirmation in a modal <dialog> (focus trapped, Escape cancels). */
export function confirmDialog(
  title: string,
  body: Child | Child[],
  confirmLabel: string,
  extra?: HTMLElement,
  /** What the confirming button looks like: `danger` for what cannot be undone. */
  tone: 'danger' | 'primary' = 'danger',
): Promise<boolean> {
  return new Promise((resolve) => {
    const titleId = `dlg-${Math.random().toString(36).slice(2, 9)}`;
    const dialog = h(
      'dialog',
      { 'aria-labelledby': titleId },
      h(
        'form',
        { method: 'dialog' },
        h('h2', { id: titleId }, title),
        h('div', {}, body),
        extra ?? null,
        h(
          'div',
          { class: 'actions' },
          // Cancel closes whatever the fields hold (an emptied required field included).
          h(
            'button',
            { type: 'submit', value: 'cancel', class: 'secondary', formnovalidate: true },
            'Cancel',
          ),
          h(
            'button',
            { type: 'submit', value: 'ok', ...(tone === 'danger' ? { class: 'danger' } : {}) },
            confirmLabel,
          ),
        ),
      ),
    );
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'ok');
      dialog.remove();
    });
    document.body.appendChild(dialog);
    dialog.showModal();
  });
}

export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** The panel that shows a secret once, with a copy button. */
export function secretPanel(
  title: string,
  secret: string,
  note: Child | Child[],
  onDone: () => void,
): HTMLElement {
  const out = h('output', { 'aria-label': title }, secret);
  const copied = h('span', { role: 'status', class: 'muted' });
  const panel = h(
    'div',
    { class: 'secret', role: 'region', 'aria-label': title },
    h('h2', {}, title),
    h('p', {}, note),
    out,
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          onclick: async () => {
            copied.textContent = (await copyText(secret))
              ? 'Copied to the clipboard.'
              : 'Copy failed: select the text and copy it.';
          },
        },
        'Copy',
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () => {
            panel.remove();
            onDone();
          },
        },
        'Done, I stored it',
      ),
      copied,
    ),
  );
  return panel;
}
