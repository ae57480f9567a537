// Settings and keys: the organization, the facilities (with a form to add one), and the API key rotation.
import { announce, badge, confirmDialog, errorBox, facts, field, h, mount, secretDialog, table } from './ui.js';

const STATES = /^[A-Z]{2}$/;

export async function renderSettings(ctx, container, { signOut, rekey }) {
  const { api } = ctx;
  const [organization, facilities] = await Promise.all([
    api.call('GET', '/medical/v1/organization').catch((error) => (error.status === 404 ? undefined : Promise.reject(error))),
    api.call('GET', '/medical/v1/facility'),
  ]);
  const status = h('div', { 'aria-live': 'polite' });

  const org = h(
    'section',
    { class: 'card', 'aria-labelledby': 'org-title' },
    h('h2', { id: 'org-title' }, 'Organization'),
    organization
      ? facts([
          ['Name', organization.name],
          ['Type', organization.type],
          ['OID', organization.oid],
          ['Location', `${organization.location.addressLine1}, ${organization.location.city}, ${organization.location.state} ${organization.location.zip}`],
        ])
      : h('p', {}, 'No organization yet: create it through the API (POST /medical/v1/organization).'),
  );

  const input = (name, attributes = {}) => h('input', { type: 'text', name, required: true, ...attributes });
  const controls = {
    name: input('name'),
    npi: input('npi', { inputmode: 'numeric', pattern: '\\d{10}' }),
    addressLine1: input('addressLine1'),
    city: input('city'),
    state: input('state', { size: 3, maxlength: 2 }),
    zip: input('zip', { size: 6, inputmode: 'numeric' }),
  };
  const facilityCard = h(
    'section',
    { class: 'card', 'aria-labelledby': 'facilities-title' },
    h('h2', { id: 'facilities-title' }, 'Facilities'),
    table(
      'Facilities of the account',
      ['Name', 'NPI', 'Address', 'Active'],
      facilities.facilities.map((f) => [f.name, f.npi, `${f.address.addressLine1}, ${f.address.city}, ${f.address.state} ${f.address.zip}`, f.active ? badge('active', 'ok') : badge('inactive', 'warn')]),
      { captionHidden: true, empty: 'No facilities yet.' },
    ),
    h(
      'form',
      {
        class: 'grid-form',
        onsubmit: async (event) => {
          event.preventDefault();
          const state = controls.state.value.trim().toUpperCase();
          if (!STATES.test(state)) return mount(status, errorBox({ message: 'State: two letters, e.g. OR' }));
          try {
            await api.call('POST', '/medical/v1/facility', {
              body: {
                name: controls.name.value.trim(),
                npi: controls.npi.value.trim(),
                address: { addressLine1: controls.addressLine1.value.trim(), city: controls.city.value.trim(), state, zip: controls.zip.value.trim(), country: 'USA' },
              },
            });
            announce('Facility added');
            await renderSettings(ctx, container, { signOut, rekey });
          } catch (error) {
            mount(status, errorBox(error));
          }
        },
      },
      h('h3', {}, 'Add a facility'),
      field('Name', controls.name),
      field('NPI', controls.npi, '10 digits'),
      field('Street address', controls.addressLine1),
      field('City', controls.city),
      field('State', controls.state),
      field('ZIP', controls.zip),
      h('button', { type: 'submit' }, 'Add facility'),
    ),
  );

  const keyCard = h(
    'section',
    { class: 'card', 'aria-labelledby': 'key-title' },
    h('h2', { id: 'key-title' }, 'API key'),
    h('p', {}, 'A new key replaces the current one: every program using the current key must be given the new one. The old key stops working within a few seconds.'),
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          onclick: async () => {
            const confirmed = await confirmDialog({ title: 'Rotate the API key?', body: 'The current key stops working within a few seconds, for this console and for every program using it.', confirm: 'Rotate the key', danger: true });
            if (!confirmed) return;
            try {
              const rotated = await api.call('POST', '/settings/api-key/rotate');
              rekey(rotated.apiKey);
              await secretDialog({ title: 'New API key', body: 'Copy it now: it is shown this once. This console already uses it.', secret: rotated.apiKey });
              announce('API key rotated');
            } catch (error) {
              mount(status, errorBox(error));
            }
          },
        },
        'Rotate the API key',
      ),
      h('button', { type: 'button', onclick: signOut }, 'Sign out'),
    ),
  );

  mount(container, h('h1', {}, 'Settings'), status, h('div', { class: 'grid' }, org, keyCard), facilityCard);
}
