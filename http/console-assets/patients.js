// Patients: the list with its search, and one patient: demographics, facilities, cohorts, the opt-out,
// document queries, documents read as rendered HTML, and the consolidated record (record.js).
import { sameOrigin } from './api.js';
import { renderRecord } from './record.js';
import { announce, badge, confirmDialog, errorBox, facts, field, h, mount, table, when } from './ui.js';

/** Patients shown per page of the list or of a search. */
const PAGE = 50;
/**
 * Requests one press of Search or More may make: each examines a bounded number of patients on the
 * service, so a rare name in a large account takes several before a page fills.
 */
const REQUESTS_PER_PAGE = 20;

const fullName = (p) => `${p.firstName} ${p.lastName}`;
const cursorOf = (page) => (page.meta.nextPage ? (new URL(page.meta.nextPage, location.href).searchParams.get('cursor') ?? undefined) : undefined);

/**
 * The next patients of a search, asked of the service (name, date of birth and externalId are filtered
 * there, names folded as the import matches them): up to a page of them, and the cursor to go on from.
 */
async function readPatients(api, filters, cursor) {
  const patients = [];
  for (let requests = 0; requests < REQUESTS_PER_PAGE && patients.length < PAGE; requests++) {
    const page = await api.call('GET', '/medical/v1/patient', { query: { ...filters, count: PAGE - patients.length, cursor } });
    patients.push(...page.patients);
    cursor = cursorOf(page);
    if (!cursor) break;
  }
  return { patients, cursor };
}

export async function renderPatients(ctx, container) {
  const { api } = ctx;
  const name = h('input', { type: 'search', name: 'name', autocomplete: 'off' });
  const dob = h('input', { type: 'date', name: 'dob' });
  const externalId = h('input', { type: 'search', name: 'externalId', autocomplete: 'off' });
  const results = h('div', { 'aria-live': 'polite' });
  let shown = [];
  let filters = {};
  let cursor;

  function draw() {
    const rows = shown.map((p) => [
      h('a', { href: `#/patients/${encodeURIComponent(p.id)}` }, fullName(p)),
      p.dob,
      p.genderAtBirth,
      p.externalId ?? '',
      p.hieOptOut ? badge('opted out', 'warn') : badge('shared', 'ok'),
    ]);
    mount(
      results,
      table(`Patients (${shown.length}${cursor ? ', more to come' : ''})`, ['Name', 'Date of birth', 'Gender', 'externalId', 'HIE'], rows, { empty: 'No patient matches.' }),
      cursor ? h('button', { type: 'button', onclick: () => void more() }, 'More patients') : null,
    );
  }
  async function more() {
    try {
      const next = await readPatients(api, filters, cursor);
      shown = [...shown, ...next.patients];
      cursor = next.cursor;
      draw();
    } catch (error) {
      draw();
      results.append(errorBox(error));
    }
  }
  async function search() {
    filters = { name: name.value.trim() || undefined, dob: dob.value || undefined, externalId: externalId.value.trim() || undefined };
    shown = [];
    cursor = undefined;
    await more();
  }
  const form = h(
    'form',
    {
      role: 'search',
      class: 'card row',
      onsubmit: (event) => {
        event.preventDefault();
        void search();
      },
    },
    field('Name', name),
    field('Date of birth', dob),
    field('externalId', externalId),
    h('button', { type: 'submit', class: 'primary' }, 'Search'),
  );
  mount(container, h('h1', {}, 'Patients'), form, results);
  await search();
}

export async function renderPatient(ctx, container, patientId) {
  const { api } = ctx;
  const id = encodeURIComponent(patientId);
  let alive = true;
  let timer;
  // The record asked for with the rest, not after it: it is the largest answer, and the view waits for it.
  const bundle = api.call('GET', `/medical/v1/patient/${id}/consolidated`);
  bundle.catch(() => undefined);
  const [patient, facilities, cohorts, documents, query] = await Promise.all([
    api.call('GET', `/medical/v1/patient/${id}`),
    api.call('GET', `/medical/v1/patient/${id}/facility`),
    api.call('GET', `/medical/v1/patient/${id}/cohort`),
    api.call('GET', '/medical/v1/document', { query: { patientId, output: 'dto' } }),
    api.call('GET', '/medical/v1/document/query', { query: { patientId } }),
  ]);
  const documentsById = new Map(documents.documents.map((d) => [d.id, d]));

  // --- Opt-out ---
  const optOut = h('section', { class: 'card', 'aria-labelledby': 'optout-title' });
  function drawOptOut(current) {
    mount(
      optOut,
      h('h2', { id: 'optout-title' }, 'Health information exchange'),
      h('p', { 'data-testid': 'optout-state' }, current ? 'Opted out: no network is queried for this patient and nothing is shared.' : 'Shared: document queries reach the networks.'),
      h(
        'button',
        {
          type: 'button',
          class: current ? 'primary' : 'danger',
          onclick: async () => {
            const confirmed = await confirmDialog({
              title: current ? 'Opt the patient back in?' : 'Opt the patient out?',
              body: current
                ? `${fullName(patient)} will be included in health information exchanges again.`
                : `${fullName(patient)} will be excluded from health information exchanges: no document query will reach a network.`,
              confirm: current ? 'Opt back in' : 'Opt out',
              danger: !current,
            });
            if (!confirmed) return;
            try {
              const changed = await api.call('PUT', `/medical/v1/patient/${id}/hie-opt-out`, { query: { hieOptOut: String(!current) } });
              drawOptOut(changed.hieOptOut);
              announce(changed.hieOptOut ? 'The patient is opted out' : 'The patient is opted back in');
              optOut.querySelector('button').focus();
            } catch (error) {
              optOut.append(errorBox(error));
            }
          },
        },
        current ? 'Opt back in' : 'Opt out of exchanges',
      ),
    );
  }
  drawOptOut(patient.hieOptOut);

  // --- Document queries ---
  const queries = h('section', { class: 'card', 'aria-labelledby': 'queries-title' });
  function drawQuery(latest) {
    const step = (label, s) => (s ? [label, `${s.status}: ${s.successful} of ${s.total}${s.errors ? `, ${s.errors} failed` : ''}`] : [label, '']);
    const running = latest.requestId && (latest.download.status === 'processing' || latest.convert.status === 'processing');
    mount(
      queries,
      h('h2', { id: 'queries-title' }, 'Document queries'),
      latest.requestId ? facts([step('Download', latest.download), step('Conversion', latest.convert)]) : h('p', {}, 'No document query yet.'),
      h(
        'button',
        {
          type: 'button',
          disabled: running || patient.hieOptOut ? true : undefined,
          onclick: async () => {
            try {
              drawQuery(await api.call('POST', '/medical/v1/document/query', { query: { patientId, facilityId: patient.facilityIds[0] } }));
              announce('Document query started');
              poll();
            } catch (error) {
              queries.append(errorBox(error));
            }
          },
        },
        'Query the networks for documents',
      ),
    );
  }
  const poll = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      if (!alive) return;
      const latest = await api.call('GET', '/medical/v1/document/query', { query: { patientId } }).catch(() => undefined);
      if (!alive || !latest) return;
      drawQuery(latest);
      if (latest.requestId && (latest.download.status === 'processing' || latest.convert.status === 'processing')) poll();
      else announce('Document query ended; reload the patient to see new documents');
    }, 1000);
  };
  drawQuery(query);

  // --- Documents, read as rendered HTML ---
  const reader = h('div', { class: 'reader' });
  async function openDocument(documentId) {
    const doc = documentsById.get(documentId);
    if (!doc) return;
    mount(reader, h('p', {}, 'Rendering…'));
    try {
      const xml = /xml/.test(doc.mimeType);
      const { url } = await api.call('GET', '/medical/v1/document/download-url', { query: { fileName: doc.fileName, conversionType: xml ? 'html' : undefined } });
      mount(
        reader,
        h('h3', { id: 'reader-title', tabindex: '-1' }, doc.description || doc.fileName),
        // No scripts and an opaque origin: a document is shown, never run.
        h('iframe', { sandbox: '', src: sameOrigin(url), title: `Document: ${doc.description || doc.fileName}`, class: 'document' }),
        h('p', {}, h('a', { href: sameOrigin(url), target: '_blank', rel: 'noopener' }, 'Open in a new tab')),
      );
      reader.querySelector('h3').focus();
    } catch (error) {
      mount(reader, errorBox(error));
    }
  }
  const documentsSection = h(
    'section',
    { class: 'card', 'aria-labelledby': 'documents-title', id: 'documents' },
    h('h2', { id: 'documents-title' }, 'Documents'),
    table(
      'Documents of the patient, oldest first',
      ['Document', 'Type', 'Received', 'Size', ''],
      documents.documents.map((d) => [
        d.description || d.fileName,
        d.type?.text ?? d.type?.coding?.[0]?.display ?? '',
        when(d.indexed),
        `${Math.max(1, Math.round(d.size / 1024))} KB`,
        h('button', { type: 'button', onclick: () => openDocument(d.id), 'aria-label': `Read ${d.description || d.fileName}` }, 'Read'),
      ]),
      { captionHidden: true, empty: 'No documents yet.' },
    ),
    reader,
  );

  const facilityNames = facilities.facilities.map((f) => f.name).join(', ');
  const address = patient.address[0];
  const demographics = h(
    'section',
    { class: 'card', 'aria-labelledby': 'demo-title' },
    h('h2', { id: 'demo-title' }, 'Demographics'),
    facts([
      ['Date of birth', patient.dob],
      ['Gender at birth', patient.genderAtBirth],
      ['externalId', patient.externalId],
      ['Address', address ? `${address.addressLine1}, ${address.city}, ${address.state} ${address.zip}` : ''],
      ['Contact', patient.contact.map((c) => [c.phone, c.email].filter(Boolean).join(' · ')).filter(Boolean).join('; ')],
      ['Facilities', facilityNames],
      ['Cohorts', cohorts.cohorts.map((c) => c.name).join(', ') || 'none'],
      ['Created', when(patient.dateCreated)],
    ]),
  );
  const record = h('div', { class: 'record' });
  mount(
    container,
    h('p', { class: 'crumbs' }, h('a', { href: '#/patients' }, 'Patients')),
    h('h1', {}, fullName(patient), patient.hieOptOut ? [' ', badge('opted out', 'warn')] : null),
    h('div', { class: 'grid' }, demographics, optOut, queries),
    record,
    documentsSection,
  );
  await renderRecord(ctx, record, patientId, { documentsById, openDocument, bundle });
  return () => {
    alive = false;
    clearTimeout(timer);
  };
}
