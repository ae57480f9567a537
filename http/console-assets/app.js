// The console's shell: sign-in, navigation and the hash router. Views live in their own modules; each
// is `render(ctx, container, ...params)` and may return a function called when the view is left.
import { Api, forgetKey, storedKey, storeKey } from './api.js';
import { renderImports } from './imports.js';
import { renderPatient, renderPatients } from './patients.js';
import { renderSettings } from './settings.js';
import { announce, errorBox, field, h, mount } from './ui.js';
import { renderWebhooks } from './webhooks.js';

const root = document.getElementById('app');
const api = new Api(root.dataset.base ?? '');
const ctx = { api, base: api.base, organization: undefined };

const SECTIONS = [
  ['imports', 'Imports'],
  ['patients', 'Patients'],
  ['webhooks', 'Webhooks'],
  ['settings', 'Settings'],
];

/** Routes: `#/<section>` and `#/<section>/<id>`. The key never appears in the address. */
const ROUTES = {
  imports: (container, id) => renderImports(ctx, container, id),
  patients: (container, id) => (id ? renderPatient(ctx, container, id) : renderPatients(ctx, container)),
  webhooks: (container) => renderWebhooks(ctx, container),
  settings: (container) => renderSettings(ctx, container, { signOut, rekey }),
};

let leave;

function signInView(problem) {
  const input = h('input', { type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, size: 44, name: 'apiKey' });
  const status = h('div', { 'aria-live': 'polite' }, problem ? errorBox(problem) : null);
  const form = h(
    'form',
    {
      class: 'card signin',
      onsubmit: async (event) => {
        event.preventDefault();
        const key = input.value.trim();
        if (!key) return;
        storeKey(key);
        mount(status, h('p', {}, 'Signing in…'));
        try {
          await start();
        } catch (error) {
          forgetKey();
          mount(status, errorBox(error.status === 401 ? { message: 'This API key is not valid', code: 'UNAUTHORIZED' } : error));
          input.focus();
        }
      },
    },
    h('h1', {}, 'carebridge console'),
    h('p', {}, 'Sign in with an API key. It is kept in this browser tab only and sent to this service alone; closing the tab forgets it.'),
    field('API key', input),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    status,
  );
  mount(root, h('main', { id: 'main', tabindex: '-1' }, form), h('div', { id: 'announce', role: 'status', 'aria-live': 'polite', class: 'visually-hidden' }));
  input.focus();
}

function shell() {
  const nav = h(
    'nav',
    { 'aria-label': 'Sections' },
    h('ul', {}, SECTIONS.map(([id, label]) => h('li', {}, h('a', { href: `#/${id}`, 'data-section': id }, label)))),
  );
  const header = h(
    'header',
    { class: 'top' },
    h('a', { class: 'brand', href: '#/imports' }, 'carebridge'),
    h('span', { class: 'org' }, ctx.organization ? ctx.organization.name : ''),
    nav,
    h('button', { type: 'button', class: 'link', onclick: signOut }, 'Sign out'),
  );
  const main = h('main', { id: 'main', tabindex: '-1' });
  mount(root, header, main, h('div', { id: 'announce', role: 'status', 'aria-live': 'polite', class: 'visually-hidden' }));
  return main;
}

async function route() {
  if (!storedKey()) return signInView();
  const main = document.getElementById('main');
  if (!main || !document.querySelector('header.top')) return;
  const [section = 'imports', id] = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const render = ROUTES[section] ?? ROUTES.imports;
  for (const link of document.querySelectorAll('nav a')) {
    if (link.dataset.section === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (typeof leave === 'function') leave();
  leave = undefined;
  mount(main, h('p', { class: 'loading' }, 'Loading…'));
  try {
    leave = await render(main, id);
  } catch (error) {
    mount(main, h('h1', { tabindex: '-1' }, 'Something went wrong'), errorBox(error));
  }
  // Moves focus to the new view's heading, so keyboard and screen reader users land where the page changed.
  const heading = main.querySelector('h1');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus({ preventScroll: true });
    document.title = `${heading.textContent} · carebridge console`;
  }
}

/** Checks the key by reading the account's organization, then shows the console. */
async function start() {
  ctx.organization = await api.call('GET', '/medical/v1/organization').catch((error) => {
    if (error.status === 404) return undefined;
    throw error;
  });
  shell();
  if (!location.hash) history.replaceState(null, '', '#/imports');
  await route();
}

function signOut() {
  if (typeof leave === 'function') leave();
  leave = undefined;
  forgetKey();
  history.replaceState(null, '', location.pathname);
  signInView();
  announce('Signed out');
}

/** After a key rotation: the new key replaces the old one in this tab. */
function rekey(newKey) {
  storeKey(newKey);
}

window.addEventListener('hashchange', () => void route());
window.addEventListener('console:unauthorized', () => {
  // At sign-in the form says the key is wrong itself; this is for a key that stopped working later.
  if (!document.querySelector('header.top')) return;
  forgetKey();
  if (typeof leave === 'function') leave();
  leave = undefined;
  signInView({ message: 'The API key is no longer valid; sign in again', code: 'UNAUTHORIZED' });
});

if (storedKey()) {
  start().catch((error) => {
    if (error.status !== 401) signInView(error);
  });
} else signInView();
