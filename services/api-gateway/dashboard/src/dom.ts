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

export function fmtDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime())
    ? '—'
    : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function badge(text: string): HTMLElement {
  return h('span', { class: `badge ${text}` }, text);
}

/**
 * A data table. Below 600 px each row becomes a card (CSS) with each cell labelled by its
 * column (data-label); the explicit ARIA roles keep the table semantics that `display` changes
 * would otherwise strip in some browsers.
 */
export function table(caption: string, headers: string[], rows: Child[][]): HTMLElement {
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
              h('td', { role: 'cell', colspan: headers.length, class: 'muted' }, 'Nothing yet.'),
            ),
      ),
    ),
  );
}

/** A labelled form control; the id ties label and input together. */
export function field(
  label: string,
  control: HTMLInputElement | HTMLSelectElement,
  hint?: string,
): HTMLElement {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  const hintEl = hint ? h('span', { class: 'muted', id: `${id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', {}, h('label', { for: id }, label), control, hintEl);
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
          h('button', { type: 'submit', value: 'cancel', class: 'secondary' }, 'Cancel'),
          h('button', { type: 'submit', value: 'ok', class: 'danger' }, confirmLabel),
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
export function secretPanel(title: string, secret: string, note: string, onDone: () => void): HTMLElement {
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
