// The console's view layer: elements built with h(), never from HTML strings, so text from the API
// (names, reasons, document titles) is always text and never markup.

/**
 * An element: `h('button', { class: 'primary', onclick }, 'Save')`. Attributes starting with `on` are
 * listeners; `true` sets a boolean attribute, `false`, `null` and `undefined` leave it out. Children are
 * nodes, strings, numbers or (nested) arrays of them; null and false are skipped.
 */
export function h(tag, attributes = {}, ...children) {
  const svg = tag.startsWith('svg:');
  const element = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4)) : document.createElement(tag);
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (name === 'value' && !svg) element.value = value;
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces the children of `parent`. */
export function mount(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
  return parent;
}

let nextId = 0;
/** A unique id for label/control pairs. */
export const uid = (prefix = 'f') => `${prefix}-${++nextId}`;

/** A labelled control: the label is a real <label for>, so it names the control for assistive technology. */
export function field(label, control, hint) {
  const id = control.id || uid();
  control.id = id;
  const hintId = hint ? `${id}-hint` : undefined;
  if (hintId) control.setAttribute('aria-describedby', hintId);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('small', { id: hintId }, hint) : null);
}

/** Says `text` to screen readers through the page's one polite live region. */
export function announce(text) {
  const region = document.getElementById('announce');
  if (region) region.textContent = text;
}

/** An error box for a failed call, with the API's code when there is one. */
export function errorBox(error) {
  const code = error && error.code ? ` (${error.code})` : '';
  return h('p', { class: 'error', role: 'alert' }, `${error && error.message ? error.message : String(error)}${code}`);
}

/** A table with a caption and header cells scoped to columns; rows are arrays of cells (nodes or text). */
export function table(caption, headers, rows, options = {}) {
  return h(
    'div',
    // Focusable and named: a table wider than a phone scrolls sideways, and keyboard users must reach it.
    { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': caption },
    h(
      'table',
      { class: options.class },
      h('caption', { class: options.captionHidden ? 'visually-hidden' : undefined }, caption),
      h('thead', {}, h('tr', {}, headers.map((header) => h('th', { scope: 'col' }, header)))),
      h('tbody', {}, rows.length === 0 ? h('tr', {}, h('td', { colspan: headers.length }, options.empty ?? 'None.')) : rows.map((row) => h('tr', {}, row.map((cell) => h('td', {}, cell))))),
    ),
  );
}

/** A description list from [term, value] pairs; pairs with an empty value are left out. */
export function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs.filter(([, value]) => value !== undefined && value !== null && value !== '').map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
  );
}

/**
 * Asks for a confirmation in a modal <dialog> (focus kept inside, Escape cancels). Resolves true when
 * the person confirms.
 */
export function confirmDialog({ title, body, confirm, danger = false }) {
  return new Promise((resolve) => {
    const titleId = uid('dialog');
    const dialog = h(
      'dialog',
      { 'aria-labelledby': titleId, class: 'confirm' },
      h(
        'form',
        { method: 'dialog' },
        h('h2', { id: titleId }, title),
        h('p', {}, body),
        h(
          'div',
          { class: 'actions' },
          h('button', { value: 'cancel', type: 'submit' }, 'Cancel'),
          h('button', { value: 'confirm', type: 'submit', class: danger ? 'danger' : 'primary' }, confirm),
        ),
      ),
    );
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(dialog.returnValue === 'confirm');
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** Shows a secret once, in a modal with a copy button; resolves when closed. The secret is nowhere else. */
export function secretDialog({ title, body, secret }) {
  return new Promise((resolve) => {
    const titleId = uid('dialog');
    const output = h('output', { class: 'secret', 'aria-label': title }, secret);
    const copy = h('button', {
      type: 'button',
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(secret);
          announce('Copied');
        } catch {
          announce('Select the text to copy it');
        }
      },
    }, 'Copy');
    const dialog = h(
      'dialog',
      { 'aria-labelledby': titleId, class: 'confirm' },
      h('form', { method: 'dialog' }, h('h2', { id: titleId }, title), h('p', {}, body), output, h('div', { class: 'actions' }, copy, h('button', { type: 'submit', class: 'primary' }, 'Done'))),
    );
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve();
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** A date or instant as people read it, in their locale; the raw value when it does not parse. */
export function when(value) {
  if (!value) return '';
  const text = String(value);
  if (/^\d{4}$/.test(text)) return text;
  if (/^\d{4}-\d{2}$/.test(text)) return text;
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) return text;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? text : date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** Parses CSV text (RFC 4180: quoted fields, doubled quotes, CRLF or LF) into rows of fields. */
export function parseCsv(text) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (quoted) {
      if (c === '"') {
        if (source[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && source[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** A small status badge; `tone` is one of ok, warn, bad, info. */
export const badge = (text, tone = 'info') => h('span', { class: `badge ${tone}` }, text);
