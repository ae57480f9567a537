// The consolidated record as a clinician reads it: problems (active, resolved and refuted kept apart),
// medications, allergies, immunizations, encounters on a timeline, results with their reference ranges,
// and charts of vitals and numeric labs over time. Every fact names the documents it came from: the
// consolidated store writes one `urn:carebridge:source-document` extension per document on each resource.
import { sameOrigin } from './api.js';
import { badge, errorBox, field, h, mount, when } from './ui.js';

const SOURCE_DOCUMENT = 'urn:carebridge:source-document';

const codeOf = (concept) => concept?.coding?.find((c) => c.code)?.code;
const textOf = (concept) => concept?.text || concept?.coding?.find((c) => c.display)?.display || concept?.coding?.find((c) => c.code)?.code || '';
/** What a resource is called, whatever its type: its code, name or title, else its type alone. */
function nameOf(r) {
  const concept = r.code ?? r.vaccineCode ?? r.medicationCodeableConcept ?? r.type?.[0] ?? r.category?.[0];
  const human = Array.isArray(r.name) ? r.name[0] : undefined;
  const personName = human ? human.text || [...(human.given ?? []), human.family].filter(Boolean).join(' ') : undefined;
  return textOf(concept) || (typeof r.name === 'string' ? r.name : personName) || r.title || r.description || '';
}

const sourcesOf = (resource) => (resource.extension ?? []).filter((e) => e.url === SOURCE_DOCUMENT && typeof e.valueString === 'string').map((e) => e.valueString);

/** When a fact happened, for sorting and display: the first date it carries. */
function dateOf(r) {
  return (
    r.effectiveDateTime ?? r.effectivePeriod?.start ?? r.onsetDateTime ?? r.onsetPeriod?.start ?? r.occurrenceDateTime ?? r.performedDateTime ?? r.performedPeriod?.start ?? r.period?.start ?? r.recordedDate ?? r.authoredOn ?? r.issued ?? ''
  );
}

/** The problem's place: refuted (the document negated it) wins over its clinical status. */
export function problemGroup(condition) {
  const verification = codeOf(condition.verificationStatus);
  if (verification === 'refuted' || verification === 'entered-in-error') return 'refuted';
  const clinical = codeOf(condition.clinicalStatus);
  return clinical === 'resolved' || clinical === 'inactive' || clinical === 'remission' ? 'resolved' : 'active';
}

function quantity(q) {
  if (!q || q.value === undefined) return '';
  return `${q.value}${q.unit ? ` ${q.unit}` : ''}`;
}

function rangeText(range) {
  if (!range) return '';
  if (range.text) return range.text;
  const low = range.low?.value;
  const high = range.high?.value;
  const unit = range.high?.unit ?? range.low?.unit ?? '';
  if (low !== undefined && high !== undefined) return `${low}–${high}${unit ? ` ${unit}` : ''}`;
  if (low !== undefined) return `≥ ${low}${unit ? ` ${unit}` : ''}`;
  if (high !== undefined) return `≤ ${high}${unit ? ` ${unit}` : ''}`;
  return '';
}

/** H or L against the first reference range, else the observation's own interpretation code. */
function flagOf(observation) {
  const value = observation.valueQuantity?.value;
  const range = observation.referenceRange?.[0];
  if (typeof value === 'number' && range) {
    if (typeof range.low?.value === 'number' && value < range.low.value) return 'L';
    if (typeof range.high?.value === 'number' && value > range.high.value) return 'H';
  }
  const interpretation = codeOf(observation.interpretation?.[0]);
  return interpretation && interpretation !== 'N' ? interpretation : '';
}

function medicationName(statement) {
  if (statement.medicationCodeableConcept) return textOf(statement.medicationCodeableConcept);
  const reference = statement.medicationReference?.reference;
  if (reference?.startsWith('#')) {
    const contained = (statement.contained ?? []).find((c) => `#${c.id}` === reference);
    if (contained) return textOf(contained.code);
  }
  return statement.medicationReference?.display ?? '';
}

/** Facts drawn at first in each list, rows in the results table; the rest on demand, so a large record opens as fast as a small one. */
const FIRST_FACTS = 25;
const FIRST_ROWS = 50;
const MORE_ROWS = 200;
/** Series with more readings than this are drawn as a line with the latest reading marked, not a dot per reading. */
const DOTS_AT_MOST = 60;

/**
 * `bundle`: the consolidated record's request, when the caller started it already (beside its own), else
 * it is asked for here.
 */
export async function renderRecord(ctx, container, patientId, { documentsById, openDocument, bundle: pending }) {
  const { api } = ctx;
  let bundle;
  try {
    bundle = await (pending ?? api.call('GET', `/medical/v1/patient/${encodeURIComponent(patientId)}/consolidated`));
  } catch (error) {
    return mount(container, errorBox(error));
  }
  const resources = (bundle.entry ?? []).map((e) => e.resource);
  const byType = new Map();
  for (const r of resources) {
    if (!byType.has(r.resourceType)) byType.set(r.resourceType, []);
    byType.get(r.resourceType).push(r);
  }
  const of = (...types) => types.flatMap((t) => byType.get(t) ?? []);
  const newestFirst = (list) => [...list].sort((a, b) => String(dateOf(b)).localeCompare(String(dateOf(a))));

  /** The documents a fact came from, each a button that opens it in the reader below. */
  const sources = (resource) => {
    const ids = sourcesOf(resource);
    if (ids.length === 0) return h('span', { class: 'source muted' }, 'added through the API');
    return h(
      'span',
      { class: 'source' },
      'From ',
      ids.map((id, i) => {
        const doc = documentsById.get(id);
        const title = doc ? doc.description || doc.fileName : 'a document';
        return [i > 0 ? ', ' : '', doc ? h('button', { type: 'button', class: 'link', onclick: () => openDocument(id), 'data-document': id }, title) : title];
      }),
    );
  };

  const item = (title, detail, resource, extra) =>
    h('li', { class: 'fact', 'data-resource': `${resource.resourceType}/${resource.id}` }, h('span', { class: 'title' }, title), extra ?? null, detail ? h('span', { class: 'detail' }, detail) : null, sources(resource));
  /** A titled list of facts, `draw` making each one's item: the first few drawn, the others behind a button. */
  const list = (label, facts, draw, empty = 'None recorded.') => {
    const group = h('div', { class: 'group' }, h('h3', {}, label, ' ', h('span', { class: 'count' }, `(${facts.length})`)));
    if (facts.length === 0) return append(group, h('p', { class: 'muted' }, empty));
    const ul = h('ul', { class: 'facts-list' }, facts.slice(0, FIRST_FACTS).map(draw));
    return append(group, ul, showRest(facts.length - FIRST_FACTS, `${label}: show the other`, () => appendAll(ul, facts.slice(FIRST_FACTS).map(draw))));
  };
  const section = (id, title, ...children) => h('section', { class: 'card', 'aria-labelledby': id, id: `${id}-section` }, h('h2', { id }, title), children);

  // Problems
  const conditions = newestFirst(of('Condition'));
  const problem = (c) =>
    item(
      textOf(c.code),
      [c.onsetDateTime || c.onsetPeriod?.start ? `onset ${when(c.onsetDateTime ?? c.onsetPeriod?.start)}` : '', c.abatementDateTime ? `resolved ${when(c.abatementDateTime)}` : ''].filter(Boolean).join(' · '),
      c,
    );
  const problems = section(
    'problems-title',
    'Problems',
    h('div', { class: 'columns' }, [
      list('Active', conditions.filter((c) => problemGroup(c) === 'active'), problem),
      list('Resolved', conditions.filter((c) => problemGroup(c) === 'resolved'), problem),
      list('Refuted (ruled out)', conditions.filter((c) => problemGroup(c) === 'refuted'), problem, 'None ruled out.'),
    ]),
  );

  // Medications
  const medications = section(
    'medications-title',
    'Medications',
    list(
      'Medications',
      newestFirst(of('MedicationStatement', 'MedicationRequest')),
      (m) => item(medicationName(m), [m.status, m.effectivePeriod?.start ? `since ${when(m.effectivePeriod.start)}` : '', m.dosage?.[0]?.text ?? '', m.reasonCode?.[0] ? `for ${textOf(m.reasonCode[0])}` : ''].filter(Boolean).join(' · '), m),
    ),
  );

  // Allergies
  const allergies = section(
    'allergies-title',
    'Allergies',
    list(
      'Allergies and intolerances',
      of('AllergyIntolerance'),
      (a) => {
        const reactions = (a.reaction ?? []).map((r) => [(r.manifestation ?? []).map(textOf).join(', '), r.severity].filter(Boolean).join(' — ')).filter(Boolean).join('; ');
        const refuted = codeOf(a.verificationStatus) === 'refuted';
        return item(textOf(a.code) || 'Unnamed substance', [reactions, codeOf(a.clinicalStatus)].filter(Boolean).join(' · '), a, refuted ? badge('refuted', 'warn') : a.criticality === 'high' ? badge('high criticality', 'bad') : null);
      },
      'No allergies recorded.',
    ),
  );

  // Immunizations
  const immunizations = section(
    'immunizations-title',
    'Immunizations',
    list(
      'Immunizations',
      newestFirst(of('Immunization')),
      (i) => item(textOf(i.vaccineCode), [when(i.occurrenceDateTime), i.status === 'not-done' ? 'not given' : i.status].filter(Boolean).join(' · '), i),
    ),
  );

  // Encounters, on a timeline
  const visits = newestFirst(of('Encounter'));
  const visit = (e) =>
    h(
      'li',
      { 'data-resource': `Encounter/${e.id}` },
      h('time', { datetime: e.period?.start ?? '' }, when(e.period?.start) || 'date unknown'),
      h('span', { class: 'title' }, textOf(e.type?.[0]) || e.class?.display || 'Encounter'),
      h('span', { class: 'detail' }, [e.class?.display, e.status, (e.reasonCode ?? []).map(textOf).join(', ')].filter(Boolean).join(' · ')),
      sources(e),
    );
  const timeline = h('ol', { class: 'timeline', 'aria-label': 'Encounters, newest first' }, visits.slice(0, FIRST_FACTS).map(visit));
  const encounters = section(
    'encounters-title',
    'Encounters',
    timeline,
    showRest(visits.length - FIRST_FACTS, 'Encounters: show the other', () => appendAll(timeline, visits.slice(FIRST_FACTS).map(visit))),
    visits.length === 0 ? h('p', { class: 'muted' }, 'No encounters recorded.') : null,
  );

  // Results with their reference ranges
  const observations = of('Observation');
  const category = (o) => (o.category ?? []).flatMap((c) => c.coding ?? []).map((c) => c.code);
  const labs = newestFirst(observations.filter((o) => category(o).includes('laboratory') && (o.valueQuantity || o.valueString || o.valueCodeableConcept)));
  const resultRow = (o) => {
    const flag = flagOf(o);
    return h(
      'tr',
      { 'data-resource': `Observation/${o.id}` },
      h('td', {}, textOf(o.code)),
      h('td', {}, quantity(o.valueQuantity) || o.valueString || textOf(o.valueCodeableConcept)),
      h('td', {}, rangeText(o.referenceRange?.[0])),
      h('td', {}, flag ? badge(flag, 'bad') : ''),
      h('td', {}, when(dateOf(o))),
      h('td', {}, sources(o)),
    );
  };
  const resultRows = h('tbody', {}, labs.length === 0 ? h('tr', {}, h('td', { colspan: 6 }, 'No results recorded.')) : labs.slice(0, FIRST_ROWS).map(resultRow));
  // Older results a few hundred at a time: the table grows, the rows already read stay where they are.
  let resultsShown = Math.min(FIRST_ROWS, labs.length);
  const moreResults = h('p', {});
  const offerMoreResults = () => {
    const left = labs.length - resultsShown;
    mount(
      moreResults,
      left > 0
        ? h(
            'button',
            {
              type: 'button',
              onclick: () => {
                resultRows.append(...labs.slice(resultsShown, resultsShown + MORE_ROWS).map(resultRow));
                resultsShown = Math.min(labs.length, resultsShown + MORE_ROWS);
                offerMoreResults();
              },
            },
            `Show ${Math.min(left, MORE_ROWS)} older results (${left} not shown)`,
          )
        : null,
    );
  };
  offerMoreResults();
  const results = section(
    'results-title',
    'Results',
    h(
      'div',
      { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Laboratory results' },
      h(
        'table',
        { class: 'results' },
        h('caption', { class: 'visually-hidden' }, 'Laboratory results, newest first'),
        h('thead', {}, h('tr', {}, ['Test', 'Value', 'Reference range', 'Flag', 'Date', 'Source'].map((t) => h('th', { scope: 'col' }, t)))),
        resultRows,
      ),
    ),
    moreResults,
  );

  // Charts of vitals and numeric labs over time
  const series = new Map();
  for (const o of observations) {
    const cats = category(o);
    if (!cats.includes('vital-signs') && !cats.includes('laboratory')) continue;
    const value = o.valueQuantity?.value;
    const at = Date.parse(dateOf(o));
    if (typeof value !== 'number' || Number.isNaN(at)) continue;
    const key = `${codeOf(o.code) ?? textOf(o.code)}|${o.valueQuantity.unit ?? ''}`;
    if (!series.has(key)) series.set(key, { label: textOf(o.code), unit: o.valueQuantity.unit ?? '', vital: cats.includes('vital-signs'), points: [], range: o.referenceRange?.[0] });
    series.get(key).points.push({ at, value, date: dateOf(o), resource: o });
  }
  const charts = [...series.values()].sort((a, b) => Number(b.vital) - Number(a.vital) || a.label.localeCompare(b.label));
  const chartsSection = section(
    'charts-title',
    'Vitals and labs over time',
    charts.length ? h('div', { class: 'charts' }, charts.map(chart)) : h('p', { class: 'muted' }, 'No numeric vitals or results.'),
  );

  // Search through the consolidated search endpoint
  const query = h('input', { type: 'search', name: 'query', autocomplete: 'off' });
  const found = h('div', { 'aria-live': 'polite' });
  const searchForm = h(
    'form',
    {
      role: 'search',
      class: 'row',
      onsubmit: async (event) => {
        event.preventDefault();
        if (!query.value.trim()) return;
        mount(found, h('p', {}, 'Searching…'));
        try {
          const answer = await api.call('GET', `/medical/v1/patient/${encodeURIComponent(patientId)}/consolidated/search`, { query: { query: query.value.trim() } });
          if (!answer.url) return mount(found, h('p', {}, 'Nothing matched.'));
          const matched = JSON.parse(await api.fetchText(sameOrigin(answer.url)));
          const hits = (matched.entry ?? []).map((e) => e.resource);
          mount(
            found,
            h('p', {}, `${answer.resourceCount} matched`),
            h('ul', { class: 'facts-list' }, hits.slice(0, 100).map((r) => item(`${r.resourceType}: ${nameOf(r) || 'unnamed'}`, when(dateOf(r)), r))),
          );
        } catch (error) {
          mount(found, errorBox(error));
        }
      },
    },
    field('Search this record', query),
    h('button', { type: 'submit' }, 'Search'),
  );
  const search = section('search-title', 'Search the record', searchForm, found);

  const other = newestFirst(of('Procedure'));
  const procedures = section('procedures-title', 'Procedures', list('Procedures', other, (p) => item(textOf(p.code), [when(dateOf(p)), p.status].filter(Boolean).join(' · '), p)));

  mount(container, search, problems, h('div', { class: 'grid' }, allergies, medications), chartsSection, results, encounters, h('div', { class: 'grid' }, immunizations, procedures));
}

/** Appends children to an element and returns it. */
function append(element, ...children) {
  for (const child of children) if (child) element.append(child);
  return element;
}

/** Appends the nodes; returns the first. */
function appendAll(parent, nodes) {
  parent.append(...nodes);
  return nodes[0];
}

/** A button that draws the `count` facts not drawn yet (`draw` returns the first), then goes away; nothing when there are none. */
function showRest(count, label, draw) {
  if (count <= 0) return null;
  const button = h(
    'button',
    {
      type: 'button',
      class: 'link show-rest',
      onclick: () => {
        // Focus goes to the first fact drawn, where reading goes on, not back to the top of the page.
        const first = draw();
        button.remove();
        if (first) {
          first.setAttribute('tabindex', '-1');
          first.focus();
        }
      },
    },
    `${label} ${count}`,
  );
  return button;
}

/** One series drawn as an inline SVG line chart, its reference range as a band, each point titled. */
function chart(s) {
  const points = [...s.points].sort((a, b) => a.at - b.at);
  const W = 320;
  const H = 150;
  const pad = { left: 44, right: 12, top: 12, bottom: 28 };
  const values = points.map((p) => p.value);
  const low = s.range?.low?.value;
  const high = s.range?.high?.value;
  let min = Math.min(...values, ...(typeof low === 'number' ? [low] : []));
  let max = Math.max(...values, ...(typeof high === 'number' ? [high] : []));
  if (min === max) {
    min -= 1;
    max += 1;
  }
  const t0 = points[0].at;
  const t1 = points[points.length - 1].at;
  const x = (at) => (t1 === t0 ? pad.left + (W - pad.left - pad.right) / 2 : pad.left + ((at - t0) / (t1 - t0)) * (W - pad.left - pad.right));
  const y = (v) => pad.top + (1 - (v - min) / (max - min)) * (H - pad.top - pad.bottom);
  const latest = points[points.length - 1];
  const label = `${s.label}: ${points.length} reading${points.length === 1 ? '' : 's'} from ${when(points[0].date)} to ${when(latest.date)}; latest ${latest.value} ${s.unit}${s.range ? `; reference range ${rangeText(s.range)}` : ''}`;
  const year = (at) => String(new Date(at).getUTCFullYear());
  return h(
    'figure',
    { class: 'chart' },
    h(
      'svg:svg',
      { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, class: 'chart-svg' },
      typeof low === 'number' && typeof high === 'number' ? h('svg:rect', { x: pad.left, y: y(high), width: W - pad.left - pad.right, height: Math.max(1, y(low) - y(high)), class: 'band' }) : null,
      h('svg:line', { x1: pad.left, y1: H - pad.bottom, x2: W - pad.right, y2: H - pad.bottom, class: 'axis' }),
      h('svg:line', { x1: pad.left, y1: pad.top, x2: pad.left, y2: H - pad.bottom, class: 'axis' }),
      h('svg:text', { x: pad.left - 6, y: y(max) + 4, 'text-anchor': 'end', class: 'tick' }, String(+max.toFixed(2))),
      h('svg:text', { x: pad.left - 6, y: y(min) + 4, 'text-anchor': 'end', class: 'tick' }, String(+min.toFixed(2))),
      h('svg:text', { x: x(t0), y: H - 8, 'text-anchor': t1 === t0 ? 'middle' : 'start', class: 'tick' }, year(t0)),
      t1 !== t0 ? h('svg:text', { x: x(t1), y: H - 8, 'text-anchor': 'end', class: 'tick' }, year(t1)) : null,
      points.length > 1 ? h('svg:polyline', { points: points.map((p) => `${x(p.at).toFixed(1)},${y(p.value).toFixed(1)}`).join(' '), class: 'line' }) : null,
      (points.length <= DOTS_AT_MOST ? points : [latest]).map((p) => h('svg:circle', { cx: x(p.at).toFixed(1), cy: y(p.value).toFixed(1), r: 4, class: 'point' }, h('svg:title', {}, `${when(p.date)}: ${p.value} ${s.unit}`))),
    ),
    h('figcaption', {}, h('strong', {}, s.label), ` (${s.unit || 'no unit'}) — latest ${latest.value} on ${when(latest.date)}`),
  );
}
