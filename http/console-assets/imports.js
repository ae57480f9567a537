// Imports: drop a CSV, watch it run (rows, then the document queries it set off), read the failed rows'
// reasons from the result CSV, and the account's earlier imports.
import { sameOrigin } from './api.js';
import { announce, badge, errorBox, facts, field, h, mount, parseCsv, table, when } from './ui.js';

const POLL_MS = 1000;
const ENDED = new Set(['completed', 'failed', 'expired']);
/** Polls of a completed import showing no document query yet before the console stops waiting for one. */
const EMPTY_POLLS = 30;

const tone = (status) => (status === 'completed' ? 'ok' : status === 'failed' || status === 'expired' ? 'bad' : 'info');

export async function renderImports(ctx, container, requestId) {
  const { api } = ctx;
  let alive = true;
  let timer;
  const [facilities, listed] = await Promise.all([api.call('GET', '/medical/v1/facility'), api.call('GET', '/medical/v1/patient/bulk', { query: { limit: 20 } })]);
  const detail = h('section', { class: 'card', 'aria-labelledby': 'import-detail-title' });
  const history = h('section', { class: 'card', 'aria-labelledby': 'imports-title' });

  // --- The form ---
  const file = h('input', { type: 'file', accept: '.csv,text/csv', name: 'csv' });
  const chosen = h('p', { class: 'chosen', 'aria-live': 'polite' }, 'No file chosen.');
  let picked;
  const pick = (candidate) => {
    picked = candidate;
    chosen.textContent = candidate ? `${candidate.name} (${Math.max(1, Math.round(candidate.size / 1024))} KB)` : 'No file chosen.';
  };
  file.addEventListener('change', () => pick(file.files[0]));
  const drop = h('div', { class: 'drop' }, h('p', {}, 'Drop a CSV file here, or choose one:'), field('CSV file', file), chosen);
  drop.addEventListener('dragover', (event) => {
    event.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (event) => {
    event.preventDefault();
    drop.classList.remove('over');
    if (event.dataTransfer.files[0]) pick(event.dataTransfer.files[0]);
  });
  const facility = h(
    'select',
    { name: 'facilityId', required: true },
    facilities.facilities.map((f) => h('option', { value: f.id }, f.name)),
  );
  const dryRun = h('input', { type: 'checkbox', name: 'dryRun' });
  const formStatus = h('div', { 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Start import');
  const form = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'new-import-title',
      onsubmit: async (event) => {
        event.preventDefault();
        if (!picked) {
          mount(formStatus, errorBox({ message: 'Choose a CSV file first' }));
          file.focus();
          return;
        }
        submit.disabled = true;
        mount(formStatus, h('p', {}, 'Uploading…'));
        try {
          const started = await api.call('POST', '/medical/v1/patient/bulk', { query: { facilityId: facility.value, dryRun: dryRun.checked ? 'true' : undefined } });
          await api.fetchJson(sameOrigin(started.uploadUrl), { method: 'PUT', raw: picked, headers: { 'content-type': 'text/csv' } });
          mount(formStatus, h('p', {}, 'Uploaded; the import runs.'));
          announce('Import started');
          location.hash = `#/imports/${encodeURIComponent(started.requestId)}`;
        } catch (error) {
          mount(formStatus, errorBox(error));
        } finally {
          submit.disabled = false;
        }
      },
    },
    h('h2', { id: 'new-import-title' }, 'New import'),
    facilities.facilities.length === 0 ? h('p', {}, 'Add a facility in Settings first: every patient belongs to one.') : null,
    drop,
    h('div', { class: 'row' }, field('Facility', facility), h('div', { class: 'field check' }, dryRun, h('label', { for: (dryRun.id = 'dry-run') }, 'Dry run (validate and match, write nothing)'))),
    submit,
    formStatus,
  );

  // --- The earlier imports ---
  function renderHistory(requests) {
    const byId = new Map(facilities.facilities.map((f) => [f.id, f.name]));
    mount(
      history,
      h('h2', { id: 'imports-title' }, 'Earlier imports'),
      table(
        'Imports of this account, newest first',
        ['Started', 'Facility', 'Outcome', 'Rows', 'Created', 'Updated', 'Failed', ''],
        requests.map((r) => [
          when(r.createdAt),
          byId.get(r.facilityId) ?? r.facilityId,
          [badge(r.status, tone(r.status)), r.dryRun ? [' ', badge('dry run', 'warn')] : null],
          r.total ?? '',
          r.created,
          r.updated,
          r.failed,
          h('a', { href: `#/imports/${encodeURIComponent(r.requestId)}`, 'aria-label': `Open the import started ${when(r.createdAt)}` }, 'Open'),
        ]),
        { captionHidden: true, empty: 'No imports yet.' },
      ),
    );
  }

  // --- One import, live ---
  let failedRows;
  // Rendered once per import, not on every poll, so a filter being typed keeps its text and focus.
  const failedArea = h('div', { id: 'failed-rows' });
  let emptyPolls = 0;
  async function showDetail(id) {
    let status;
    try {
      status = await api.call('GET', `/medical/v1/patient/bulk/${encodeURIComponent(id)}`);
    } catch (error) {
      mount(detail, h('h2', { id: 'import-detail-title' }, 'Import'), errorBox(error));
      return;
    }
    if (!alive) return;
    const queries = status.documentQueries;
    // The queries are recorded by jobs after the import completes, so a total of 0 may mean "not yet": keep
    // looking for a while, unless no row made a patient (opted-out patients get none, so it stays 0 for them).
    if (queries && queries.total === 0) emptyPolls++;
    const queriesDone = !queries || (queries.total > 0 ? queries.processing === 0 : status.succeeded === 0 || emptyPolls > EMPTY_POLLS);
    const finished = ENDED.has(status.status) && (status.dryRun || status.status !== 'completed' || queriesDone);
    const total = status.total ?? 0;
    mount(
      detail,
      h('h2', { id: 'import-detail-title' }, 'Import ', badge(status.status, tone(status.status)), status.dryRun ? [' ', badge('dry run', 'warn')] : null),
      h('p', { class: 'muted' }, `Started ${when(status.createdAt)} · request ${status.requestId}`),
      status.reason ? h('p', { class: 'error', role: 'alert' }, status.reason) : null,
      status.paused ? h('p', { class: 'warn' }, status.paused.reason) : null,
      h(
        'div',
        { class: 'progress' },
        h('label', { for: 'rows-progress' }, `Rows validated: ${status.processed} of ${status.total ?? '…'}`),
        h('progress', { id: 'rows-progress', max: Math.max(total, 1), value: status.total === null ? undefined : status.processed }),
      ),
      h(
        'dl',
        { class: 'counts', 'data-testid': 'import-counts' },
        [
          ['Validated', status.processed],
          ['Created', status.created],
          ['Updated', status.updated],
          ['Failed', status.failed],
        ].map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', { 'data-count': term.toLowerCase() }, value))),
      ),
      queries
        ? h(
            'div',
            { class: 'progress' },
            h('h3', {}, 'Document queries it set off'),
            h('label', { for: 'queries-progress' }, `${queries.completed + queries.failed} of ${queries.total} ended (${queries.processing} running, ${queries.failed} failed)`),
            h('progress', { id: 'queries-progress', max: Math.max(queries.total, 1), value: queries.completed + queries.failed }),
          )
        : null,
      status.ignoredColumns && status.ignoredColumns.length ? h('p', {}, `Columns not imported (kept in the result): ${status.ignoredColumns.join(', ')}`) : null,
      status.result ? h('p', {}, h('a', { href: sameOrigin(status.result), download: `import-${status.requestId}-result.csv`, class: 'button' }, 'Download the result CSV')) : null,
      failedArea,
    );
    if (status.status === 'completed' && status.result && status.failed > 0 && failedRows?.requestId !== status.requestId) await showFailedRows(status);
    if (status.status === 'completed' && status.failed === 0) mount(failedArea, h('p', {}, 'Every row succeeded.'));
    if (!finished && alive) timer = setTimeout(() => void showDetail(id), POLL_MS);
    else if (finished) {
      announce(`Import ${status.status}`);
      api.call('GET', '/medical/v1/patient/bulk', { query: { limit: 20 } }).then((fresh) => alive && renderHistory(fresh.requests), () => {});
    }
  }

  async function showFailedRows(status) {
    const target = failedArea;
    {
      const rows = parseCsv(await api.fetchText(status.result));
      const header = rows[0] ?? [];
      const col = (name) => header.indexOf(name);
      failedRows = {
        requestId: status.requestId,
        rows: rows
          .slice(1)
          .map((row, index) => ({ line: index + 2, row }))
          .filter(({ row }) => row[col('status')] === 'failed')
          .map(({ line, row }) => ({
            line,
            externalId: row[col('externalId')] ?? '',
            name: [row[col('firstName')], row[col('lastName')]].filter(Boolean).join(' '),
            reason: row[col('reason')] ?? '',
          })),
      };
    }
    const filter = h('input', { type: 'search', name: 'filter', placeholder: 'e.g. dob' });
    const list = h('div');
    const draw = () => {
      const needle = filter.value.trim().toLowerCase();
      const shown = failedRows.rows.filter((r) => !needle || `${r.externalId} ${r.name} ${r.reason}`.toLowerCase().includes(needle));
      mount(list, table(`Failed rows (${shown.length} of ${failedRows.rows.length})`, ['Line', 'externalId', 'Name', 'Reason'], shown.map((r) => [r.line, r.externalId, r.name, h('span', { class: 'reason' }, r.reason)]), { class: 'failed-rows' }));
    };
    filter.addEventListener('input', draw);
    mount(target, h('h3', {}, 'Rows that failed'), field('Filter the failed rows', filter), list);
    draw();
  }

  mount(container, h('h1', {}, 'Imports'), form, requestId ? detail : null, history);
  renderHistory(listed.requests);
  if (requestId) await showDetail(requestId);
  return () => {
    alive = false;
    clearTimeout(timer);
  };
}
