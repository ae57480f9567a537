import { mainDateOf } from '../../core/documents/filters.js';
import type { FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';

/** The main fields of one resource, as a person reads them in a table row. */
export interface ResourceSummary {
  name: string;
  date: string;
  status: string;
  details: string;
}

export interface TypeGroup {
  resourceType: string;
  resources: FhirResource[];
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
  for (const key of ['valueString', 'valueInteger', 'valueBoolean', 'valueDateTime']) {
    if (resource[key] !== undefined) return text(resource[key]);
  }
  return '';
}

/** The name a person would give the resource: its code, drug, vaccine, title or name. */
export function nameOf(resource: FhirResource): string {
  switch (resource.resourceType) {
    case 'Patient':
    case 'Practitioner':
    case 'RelatedPerson':
      return humanName(resource.name);
    case 'MedicationRequest':
    case 'MedicationStatement':
    case 'MedicationAdministration':
      return medicationName(resource);
    case 'Immunization':
      return conceptText(resource.vaccineCode);
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

export function summarise(resource: FhirResource): ResourceSummary {
  const status = conceptText(resource.clinicalStatus) || text(resource.status) || text(resource.lifecycleStatus);
  const details: string[] = [];
  const value = valueText(resource);
  if (value) details.push(value);
  if (resource.resourceType === 'Patient') {
    details.push(...[text(resource.gender), text(resource.birthDate) && `born ${text(resource.birthDate)}`].filter(Boolean));
  }
  if (Array.isArray(resource.reaction)) {
    const reactions = resource.reaction.filter(isObject).map((reaction) => conceptText(reaction.manifestation)).filter(Boolean);
    if (reactions.length > 0) details.push(`reaction: ${reactions.join(', ')}`);
  }
  if (Array.isArray(resource.dosageInstruction)) {
    details.push(...resource.dosageInstruction.filter(isObject).map((dosage) => text(dosage.text)).filter(Boolean));
  }
  if (Array.isArray(resource.note)) details.push(...resource.note.filter(isObject).map((note) => text(note.text)).filter(Boolean));
  return { name: nameOf(resource), date: mainDateOf(resource) ?? '', status, details: details.join('; ') };
}

/** The bundle's resources grouped by type: Patient first, then types alphabetically; order kept within a type. */
export function groupByType(bundle: FhirBundle): TypeGroup[] {
  const groups = new Map<string, FhirResource[]>();
  for (const entry of bundle.entry ?? []) {
    const resource = entry.resource;
    if (!resource || typeof resource.resourceType !== 'string') continue;
    const list = groups.get(resource.resourceType) ?? [];
    list.push(resource);
    groups.set(resource.resourceType, list);
  }
  return [...groups]
    .sort(([a], [b]) => (a === 'Patient' ? -1 : b === 'Patient' ? 1 : a.localeCompare(b)))
    .map(([resourceType, resources]) => ({ resourceType, resources }));
}

export const COLUMNS: [keyof ResourceSummary, string][] = [
  ['name', 'Name'],
  ['date', 'Date'],
  ['status', 'Status'],
  ['details', 'Details'],
];
