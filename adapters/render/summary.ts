import { mainDateOf, mainTimeOf } from '../../core/documents/filters.js';
import type { FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';
import { formatDate, formatPeriod } from './dates.js';

/** The main fields of one resource, as a person reads them in a table row. */
export interface ResourceSummary {
  name: string;
  /** The main date or period, written for people ("15 Jan 2024", "from 2 Mar 2020"). */
  date: string;
  status: string;
  details: string;
}

/** A row of a section: the summary, and the main date as written, the key rows are sorted by. */
export interface Row extends ResourceSummary {
  sortDate: string | undefined;
}

/** A part of the record as a person reads it: a human heading, its rows newest first, no row twice. */
export interface Section {
  id: string;
  title: string;
  rows: Row[];
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string {
  return typeof value === 'string' ? value.trim() : typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
}

function conceptText(value: unknown): string {
  if (Array.isArray(value)) return value.map(conceptText).filter(Boolean).join(', ');
  if (!isObject(value)) return text(value);
  if (text(value.text)) return text(value.text);
  const codings = Array.isArray(value.coding) ? value.coding.filter(isObject) : [];
  const display = codings.map((coding) => text(coding.display)).find(Boolean);
  if (display) return display;
  const coded = codings.find((coding) => text(coding.code));
  return coded ? text(coded.code) : '';
}

function humanName(value: unknown): string {
  const names = Array.isArray(value) ? value.filter(isObject) : [];
  const first = names[0];
  if (!first) return text(value);
  if (text(first.text)) return text(first.text);
  const parts = [
    ...(Array.isArray(first.prefix) ? first.prefix : []),
    ...(Array.isArray(first.given) ? first.given : []),
    first.family,
    ...(Array.isArray(first.suffix) ? first.suffix : []),
  ];
  return parts.map(text).filter(Boolean).join(' ');
}

function medicationName(resource: FhirResource): string {
  const inline = conceptText(resource.medicationCodeableConcept);
  if (inline) return inline;
  const reference = isObject(resource.medicationReference) ? resource.medicationReference : undefined;
  const contained = Array.isArray(resource.contained) ? resource.contained.filter(isObject) : [];
  const local = contained.find((item) => `#${text(item.id)}` === text(reference?.reference));
  return (local && conceptText(local.code)) || text(reference?.display);
}

function valueText(resource: Json): string {
  const quantity = resource.valueQuantity;
  if (isObject(quantity)) return [text(quantity.value), text(quantity.unit) || text(quantity.code)].filter(Boolean).join(' ');
  if (resource.valueCodeableConcept) return conceptText(resource.valueCodeableConcept);
  if (typeof resource.valueDateTime === 'string') return formatDate(resource.valueDateTime);
  for (const key of ['valueString', 'valueInteger', 'valueBoolean']) {
    if (resource[key] !== undefined) return text(resource[key]);
  }
  return '';
}

/** Text that only repeats what the section says, or a converter's placeholder, names nothing. */
function meaningful(value: string, resourceType: string): string {
  const plain = value.toLowerCase().replace(/[^a-z]/g, '');
  return plain === resourceType.toLowerCase() || plain === 'careplan' || /^unknown\b/i.test(value) ? '' : value;
}

function capitalised(value: string): string {
  return value.charAt(0).toUpperCase() + value.slice(1);
}

/** A care plan, goal or planned service by what it is about: title, description, code, category, activities. */
function planName(resource: FhirResource): string {
  const activities = Array.isArray(resource.activity)
    ? resource.activity.filter(isObject).map((activity) => (isObject(activity.detail) ? conceptText(activity.detail.code) : '') || text(isObject(activity.reference) ? activity.reference.display : ''))
    : [];
  const candidates = [text(resource.title), conceptText(resource.description), conceptText(resource.code), conceptText(resource.category), activities.filter(Boolean).join(', ')];
  return candidates.map((candidate) => meaningful(candidate, resource.resourceType)).find(Boolean) ?? '';
}

/** The relative: relationship, and the relative's name when the record gives one ("Father (John Doe)"). */
function relativeName(resource: FhirResource): string {
  const relationship = capitalised(conceptText(resource.relationship));
  const name = text(resource.name);
  return relationship && name ? `${relationship} (${name})` : relationship || name;
}

/** What the relative had: each condition with its onset, outcome and whether it contributed to death. */
function familyConditions(resource: FhirResource): string[] {
  const conditions = Array.isArray(resource.condition) ? resource.condition.filter(isObject) : [];
  return conditions.map((condition) => {
    const facts: string[] = [];
    const age = isObject(condition.onsetAge) ? [text(condition.onsetAge.value), text(condition.onsetAge.unit)].filter(Boolean).join(' ') : '';
    const period = isObject(condition.onsetPeriod) ? text(condition.onsetPeriod.start) : '';
    const onset = age ? `at ${age}` : text(condition.onsetString) || (period && formatDate(period));
    if (onset) facts.push(`onset ${onset}`);
    if (conceptText(condition.outcome)) facts.push(conceptText(condition.outcome));
    if (condition.contributedToDeath === true) facts.push('contributed to death');
    const name = conceptText(condition.code) || 'condition';
    return facts.length > 0 ? `${name} (${facts.join(', ')})` : name;
  });
}

/** The name a person would give the resource: its code, drug, vaccine, relative, plan, title or name. */
export function nameOf(resource: FhirResource): string {
  switch (resource.resourceType) {
    case 'Patient':
    case 'Practitioner':
    case 'RelatedPerson':
      return humanName(resource.name);
    case 'MedicationRequest':
    case 'MedicationStatement':
    case 'MedicationAdministration':
    case 'MedicationDispense':
      return medicationName(resource);
    case 'Immunization':
      return conceptText(resource.vaccineCode);
    case 'FamilyMemberHistory':
      return relativeName(resource) || familyConditions(resource).join('; ');
    case 'CarePlan':
    case 'Goal':
    case 'ServiceRequest':
      return planName(resource);
    case 'Composition':
    case 'DocumentReference':
      return text(resource.title) || text(resource.description) || conceptText(resource.type);
    default:
      return (
        conceptText(resource.code) ||
        text(resource.title) ||
        text(resource.name) ||
        conceptText(resource.type) ||
        conceptText(resource.description) ||
        conceptText(resource.category)
      );
  }
}

/** The main time written for people: a date, or a period "from – to". */
function dateOf(resource: FhirResource): string {
  const time = mainTimeOf(resource);
  if (!time) return '';
  return time.period ? formatPeriod(time.start, time.end) : formatDate(time.start ?? '');
}

export function summarise(resource: FhirResource): ResourceSummary {
  const status = conceptText(resource.clinicalStatus) || text(resource.status) || text(resource.lifecycleStatus);
  const details: string[] = [];
  const value = valueText(resource);
  if (value) details.push(value);
  if (resource.resourceType === 'Patient') {
    details.push(...[text(resource.gender), text(resource.birthDate) && `born ${formatDate(text(resource.birthDate))}`].filter(Boolean));
  }
  if (resource.resourceType === 'FamilyMemberHistory') {
    if (relativeName(resource)) details.push(...familyConditions(resource));
    if (text(resource.bornDate)) details.push(`born ${formatDate(text(resource.bornDate))}`);
    if (resource.deceasedBoolean === true || resource.deceasedAge || resource.deceasedDate || resource.deceasedString) details.push('deceased');
  }
  if (resource.resourceType === 'Goal' && Array.isArray(resource.target)) {
    const due = resource.target.filter(isObject).map((target) => text(target.dueDate)).find(Boolean);
    if (due) details.push(`due ${formatDate(due)}`);
  }
  if (Array.isArray(resource.reaction)) {
    const reactions = resource.reaction.filter(isObject).map((reaction) => conceptText(reaction.manifestation)).filter(Boolean);
    if (reactions.length > 0) details.push(`reaction: ${reactions.join(', ')}`);
  }
  if (Array.isArray(resource.dosageInstruction)) {
    details.push(...resource.dosageInstruction.filter(isObject).map((dosage) => text(dosage.text)).filter(Boolean));
  }
  if (Array.isArray(resource.note)) details.push(...resource.note.filter(isObject).map((note) => text(note.text)).filter(Boolean));
  return { name: nameOf(resource), date: dateOf(resource), status, details: details.join('; ') };
}

/**
 * The sections of a record, in the order a clinician reads one: who the patient is, what can hurt them
 * (allergies), what they have (problems), take, were given, what was measured and done, then history,
 * plans, documents and the people and places involved. A type not named here gets a section of its own
 * after these, named from its type ("Questionnaire response"), in alphabetical order.
 */
export const SECTIONS: readonly { title: string; types: readonly string[] }[] = [
  { title: 'Patient', types: ['Patient'] },
  { title: 'Allergies and intolerances', types: ['AllergyIntolerance'] },
  { title: 'Problems', types: ['Condition'] },
  { title: 'Medications', types: ['MedicationRequest', 'MedicationStatement', 'MedicationAdministration', 'MedicationDispense', 'Medication'] },
  { title: 'Immunizations', types: ['Immunization', 'ImmunizationRecommendation'] },
  { title: 'Results and vital signs', types: ['Observation', 'DiagnosticReport'] },
  { title: 'Procedures', types: ['Procedure'] },
  { title: 'Encounters', types: ['Encounter'] },
  { title: 'Family history', types: ['FamilyMemberHistory'] },
  { title: 'Care plan', types: ['CarePlan', 'Goal', 'ServiceRequest'] },
  { title: 'Medical equipment', types: ['Device', 'DeviceUseStatement', 'DeviceRequest'] },
  { title: 'Insurance', types: ['Coverage'] },
  { title: 'Documents', types: ['Composition', 'DocumentReference'] },
  { title: 'Care team', types: ['Practitioner', 'PractitionerRole', 'CareTeam'] },
  { title: 'Family and contacts', types: ['RelatedPerson'] },
  { title: 'Organizations and places', types: ['Organization', 'Location'] },
];

const SECTION_OF = new Map(SECTIONS.flatMap((section, index) => section.types.map((type) => [type, index] as const)));

/** "QuestionnaireResponse" as a person writes it: "Questionnaire response". */
export function typeLabel(resourceType: string): string {
  return capitalised(resourceType.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase());
}

function slug(title: string): string {
  return title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
}

/** Newest first; undated rows last; then by name, so the order never depends on the bundle's. */
function byDateThenName(a: Row, b: Row): number {
  if (a.sortDate !== b.sortDate) {
    if (a.sortDate === undefined) return 1;
    if (b.sortDate === undefined) return -1;
    return a.sortDate < b.sortDate ? 1 : -1;
  }
  return a.name.localeCompare(b.name, 'en') || a.details.localeCompare(b.details, 'en') || a.status.localeCompare(b.status, 'en');
}

/**
 * The bundle's resources in sections (see SECTIONS), empty sections left out. Where a section holds more
 * than one type, each row's details start with its type ("Goal"). Rows are sorted newest first, undated
 * last, then by name; a row exactly like another (name, date, status and details) is shown once.
 */
export function sectionsOf(bundle: FhirBundle): Section[] {
  const byTitle = new Map<string, { order: number; resources: FhirResource[] }>();
  for (const entry of bundle.entry ?? []) {
    const resource = entry.resource;
    if (!resource || typeof resource.resourceType !== 'string') continue;
    const index = SECTION_OF.get(resource.resourceType);
    const title = index === undefined ? typeLabel(resource.resourceType) : SECTIONS[index]!.title;
    const group = byTitle.get(title) ?? { order: index ?? SECTIONS.length, resources: [] };
    group.resources.push(resource);
    byTitle.set(title, group);
  }
  return [...byTitle]
    .sort(([titleA, a], [titleB, b]) => a.order - b.order || titleA.localeCompare(titleB, 'en'))
    .map(([title, { resources }]) => {
      const mixed = new Set(resources.map((resource) => resource.resourceType)).size > 1;
      const seen = new Set<string>();
      const rows: Row[] = [];
      for (const resource of resources) {
        const summary = summarise(resource);
        const details = mixed ? [typeLabel(resource.resourceType), summary.details].filter(Boolean).join('; ') : summary.details;
        // A resource that names nothing is still a row a person can place: it is called by its type.
        const row: Row = { ...summary, name: summary.name || typeLabel(resource.resourceType), details, sortDate: mainDateOf(resource) };
        const key = JSON.stringify([row.name, row.date, row.status, row.details]);
        if (seen.has(key)) continue;
        seen.add(key);
        rows.push(row);
      }
      return { id: slug(title), title, rows: rows.sort(byDateThenName) };
    });
}

export const COLUMNS: [keyof ResourceSummary, string][] = [
  ['name', 'Name'],
  ['date', 'Date'],
  ['status', 'Status'],
  ['details', 'Details'],
];
