// Settings and keys: the organization, the facilities (with a form to add one), and the API key rotation.
import { announce, badge, confirmDialog, errorBox, facts, field, h, mount, secretDialog, table } from './ui.js';

const STATES = /^[A-Z]{2}$/;

/** The organization types the API knows, as people read them. */
const TYPES = {
  acuteCare: 'Acute care',
  ambulatory: 'Ambulatory',
  hospital: 'Hospital',
  labSystems: 'Lab systems',
  pharmacy: 'Pharmacy',
  postAcuteCare: 'Post-acute care',
};

/**
 * The organization's form, filled with what is stored: saving updates it (PUT), or creates it when the
 * account has none yet (POST). The service checks every field and its answer says which one is wrong.
 */
function organizationForm(ctx, organization, status, saved) {
  const { api } = ctx;
  const location = organization?.location ?? {};
  const input = (name, value, attributes = {}) => h('input', { type: 'text', name, required: true, value: value ?? '', ...attributes });
  const controls = {
    name: input('name', organization?.name),
    type: h(
      'select',
      { name: 'type', required: true },
      Object.entries(TYPES).map(([value, label]) => h('option', { value, selected: value === (organization?.type ?? 'ambulatory') }, label)),
    ),
    addressLine1: input('addressLine1', location.addressLine1),
    city: input('city', location.city),
    state: input('state', location.state, { size: 3, maxlength: 2 }),
    zip: input('zip', location.zip, { size: 6, inputmode: 'numeric' }),
  };
  return h(
    'form',
    {
      class: 'grid-form',
      'aria-labelledby': 'org-form-title',
      onsubmit: async (event) => {
        event.preventDefault();
        const state = controls.state.value.trim().toUpperCase();
        if (!STATES.test(state)) return mount(status, errorBox({ message: 'State: two letters, e.g. OR' }));
        const body = {
          name: controls.name.value.trim(),
          type: controls.type.value,
          location: { addressLine1: controls.addressLine1.value.trim(), city: controls.city.value.trim(), state, zip: controls.zip.value.trim(), country: 'USA' },
        };
        try {
          const answer = organization
            ? await api.call('PUT', `/medical/v1/organization/${encodeURIComponent(organization.id)}`, { body })
            : await api.call('POST', '/medical/v1/organization', { body });
          await saved(answer);
        } catch (error) {
          mount(status, errorBox(error));
        }
      },
    },
    h('h3', { id: 'org-form-title' }, organization ? 'Edit the organization' : 'Create the organization'),
    field('Organization name', controls.name),
    field('Type', controls.type),
    field('Street address', controls.addressLine1),
    field('City', controls.city),
    field('State', controls.state),
    field('ZIP', controls.zip),
    h('button', { type: 'submit' }, organization ? 'Save the organization' : 'Create the organization'),
  );
}

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
          ['Type', TYPES[organization.type] ?? organization.type],
          ['OID', organization.oid],
          ['Location', `${organization.location.addressLine1}, ${organization.location.city}, ${organization.location.state} ${organization.location.zip}`],
        ])
      : h('p', {}, 'No organization yet: the account has one, named here.'),
    organizationForm(ctx, organization, status, async (saved) => {
      ctx.organization = saved;
      const shown = document.querySelector('header.top .org');
      if (shown) shown.textContent = saved.name;
      announce('Organization saved');
      await renderSettings(ctx, container, { signOut, rekey });
    }),
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
