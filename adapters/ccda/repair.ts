import type { FhirResource } from '../../core/ports/ccda.port.js';
import { mapReferencesInPlace } from '../../core/documents/references.js';
import { rewriteDates } from './date-slots.js';
import { dateRule, type DateRepairRule, type RepairContext, type RepairRule } from './repair-rule.js';
import {
  conditionCategory,
  doseUnits,
  droppedDatesRestored,
  encounterClass,
  entryIdentifiers,
  medicationHistoryIsAStatement,
  nullFlavorValues,
  partialDatesKeepPrecision,
  referenceRanges,
} from './source-repairs.js';
import { ASSERTION_RULES } from './assertions.js';
import { medicationDetails } from './medication-details.js';
import { STATEMENT_DETAIL_RULES } from './statement-details.js';

/**
 * Repairs of @medplum/ccda's output, one named rule per known defect, each applied to every resource the
 * converter produced. A rule changes only what it knows to be wrong and leaves right output as it is.
 */

type Coding = { system?: string; code?: string; display?: string };
type CodeableConcept = { coding?: Coding[]; text?: string };

export const RXNORM = 'http://www.nlm.nih.gov/research/umls/rxnorm';
export const CVX = 'http://hl7.org/fhir/sid/cvx';
/** What the converter writes for CVX: the HL7 code system OID's old home, not the FHIR URI. */
const CONVERTER_CVX = 'http://nucc.org/cvx';

export type { DateRepairRule, RepairContext, RepairRule } from './repair-rule.js';
const isDateRule = (rule: RepairRule): rule is DateRepairRule => typeof (rule as Partial<DateRepairRule>).rewriteFor === 'function';

/** Vaccine codes carry FHIR's CVX system URI, so a reader (or a query by system) recognises them. */
export const cvxSystem: RepairRule = {
  name: 'CVX code system',
  apply(resource) {
    let changed = false;
    const visit = (concept: CodeableConcept | undefined) => {
      for (const coding of concept?.coding ?? []) {
        if (coding.system === CONVERTER_CVX) {
          coding.system = CVX;
          changed = true;
        }
      }
    };
    if (resource.resourceType === 'Immunization') visit(resource.vaccineCode as CodeableConcept | undefined);
    return changed;
  },
};

/** The converter's rendering of an HL7 timestamp with a zone: seconds dropped or kept, the zone without its colon. */
const MANGLED_INSTANT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}):(\d{2})?([+-])(\d{2})(\d{2})$/;

/**
 * HL7 timestamps with a zone (`201209251130-0500`) come out of the converter as `2012-09-25T11:30:-0500`,
 * which is not a FHIR dateTime (and is dropped or misread by FHIR readers). Written back as
 * `2012-09-25T11:30:00-05:00`: the same instant, valid.
 */
const unmangleInstant = (text: string) => {
  const match = MANGLED_INSTANT.exec(text);
  return match ? `${match[1]}:${match[2] ?? '00'}${match[3]}${match[4]}:${match[5]}` : text;
};
export const zonedTimestamps = dateRule('zoned timestamps', () => unmangleInstant);

/** FHIR R4's dateTime: a time needs its zone. */
const FHIR_DATE_TIME =
  /^([0-9]([0-9]([0-9][1-9]|[1-9]0)|[1-9]00)|[1-9]000)(-(0[1-9]|1[0-2])(-(0[1-9]|[1-2][0-9]|3[0-1])(T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]{1,9})?(Z|(\+|-)((0[0-9]|1[0-3]):[0-5][0-9]|14:00)))?)?)?$/;
const DATE_SHAPED = /^\d{4}-\d{2}(-\d{2})?(T.*)?$/;

/**
 * A source timestamp that is no date at all (`200130311`: month 30) comes out as `2001-30-31T00:00:00Z`.
 * It is cut back to the precision that is valid (`2001`): what the source does say, and nothing more.
 */
const cutToValidPrecision = (text: string) => {
  if (!DATE_SHAPED.test(text) || FHIR_DATE_TIME.test(text)) return text;
  return [text.slice(0, 10), text.slice(0, 7), text.slice(0, 4)].find((prefix) => FHIR_DATE_TIME.test(prefix)) ?? text;
};
export const impossibleDatesCutToValidPrecision = dateRule('impossible dates', () => cutToValidPrecision);

const CONDITION_CLINICAL = 'http://terminology.hl7.org/CodeSystem/condition-clinical';

/**
 * A problem with an end (abatement) is over: the converter leaves every Condition `active`, which FHIR
 * forbids beside an abatement and which would show a 1998 pneumonia as current.
 */
export const abatedConditionIsResolved: RepairRule = {
  name: 'abated condition resolved',
  apply(resource) {
    if (resource.resourceType !== 'Condition') return false;
    const abated = ['abatementDateTime', 'abatementPeriod', 'abatementAge', 'abatementRange', 'abatementString'].some((key) => resource[key] !== undefined);
    if (!abated) return false;
    const status = resource.clinicalStatus as CodeableConcept | undefined;
    const code = status?.coding?.find((coding) => coding.system === CONDITION_CLINICAL)?.code;
    if (code === 'resolved' || code === 'inactive' || code === 'remission') return false;
    resource.clinicalStatus = { coding: [{ system: CONDITION_CLINICAL, code: 'resolved', display: 'Resolved' }] };
    return true;
  },
};

/**
 * A practitioner's qualification is a `{code}` element; the converter writes the author's code (a
 * taxonomy code, say) as the qualification itself, which is invalid FHIR and hides it from readers.
 */
export const practitionerQualification: RepairRule = {
  name: 'practitioner qualification',
  apply(resource) {
    if (resource.resourceType !== 'Practitioner' || !Array.isArray(resource.qualification)) return false;
    let changed = false;
    resource.qualification = (resource.qualification as Record<string, unknown>[]).map((qualification) => {
      if (qualification.code !== undefined || (qualification.coding === undefined && qualification.text === undefined)) return qualification;
      changed = true;
      const { coding, text, ...rest } = qualification;
      // Absent, not undefined: `emptyElementsPruned` would remove an undefined key and count the resource as repaired.
      return { ...rest, code: { ...(coding !== undefined ? { coding } : {}), ...(text !== undefined ? { text } : {}) } };
    });
    return changed;
  },
};

/**
 * A lot number the document does not know (`<lotNumberText nullFlavor="UNK"/>`) comes out of the converter
 * as the parsed XML element, not a string: it is removed (a lot number is text or absent), and one written
 * as an element with text keeps its text.
 */
export const lotNumberIsText: RepairRule = {
  name: 'lot number is text',
  apply(resource) {
    if (resource.resourceType !== 'Immunization' || resource.lotNumber === undefined || typeof resource.lotNumber === 'string') return false;
    const text = (resource.lotNumber as { '#text'?: unknown } | null)?.['#text'];
    if (typeof text === 'string' && text.trim() !== '') resource.lotNumber = text.trim();
    else delete resource.lotNumber;
    return true;
  },
};

/** FHIR elements of type date, dateTime or instant that the converter writes. */
const DATE_KEYS = new Set([
  'date', 'birthDate', 'recordedDate', 'authoredOn', 'issued', 'dateAsserted', 'start', 'end', 'onsetDateTime', 'abatementDateTime',
  'effectiveDateTime', 'effectiveInstant', 'occurrenceDateTime', 'performedDateTime', 'deceasedDateTime', 'valueDateTime', 'expirationDate',
  'lastOccurrence', 'onset', 'whenHandedOver', 'whenPrepared', 'timestamp', 'recorded', 'lastUpdated',
]);

/** The longest of a date's year, month and day that is a valid FHIR date; undefined when even the year is not. */
function validPrefix(text: string): string | undefined {
  if (!DATE_SHAPED.test(text)) return undefined;
  return [text.slice(0, 10), text.slice(0, 7), text.slice(0, 4)].find((prefix) => FHIR_DATE_TIME.test(prefix));
}

/** Keys of the XML parser's tree (`@_attribute`, `#text`): never FHIR element names. */
const isParserArtefact = (key: string) => key.charCodeAt(0) === 64 || key.charCodeAt(0) === 35;

/** Whether an object is an XML element copied through by the converter: every key an attribute or its text. */
function isXmlElement(record: Record<string, unknown>): boolean {
  let any = false;
  for (const key in record) {
    if (!isParserArtefact(key)) return false;
    any = true;
  }
  return any;
}

function xmlText(record: Record<string, unknown>): string | undefined {
  const text = record['#text'];
  return typeof text === 'string' || typeof text === 'number' ? String(text).trim() || undefined : undefined;
}

/** Whether a JSON value holds nothing: an empty string, object or list (after `prune`), null or undefined. */
const isEmptyLeaf = (value: unknown) => value === '' || value === null || value === undefined;

/**
 * Removes, in place, whatever holds nothing: empty strings, objects and lists, or ones holding only such.
 * Returns whether `value` itself is left empty, and reports through `removed` whether anything went.
 */
function prune(value: unknown, removed: { any: boolean }): boolean {
  if (Array.isArray(value)) {
    let write = 0;
    for (let read = 0; read < value.length; read++) {
      const item = value[read];
      if (isEmptyLeaf(item) || (typeof item === 'object' && prune(item, removed))) {
        removed.any = true;
        continue;
      }
      value[write++] = item;
    }
    value.length = write;
    return write === 0;
  }
  if (value !== null && typeof value === 'object') {
    let kept = 0;
    const record = value as Record<string, unknown>;
    for (const key in record) {
      if (isParserArtefact(key)) {
        delete record[key];
        removed.any = true;
        continue;
      }
      const text = record[key];
      if (typeof text === 'string' && DATE_KEYS.has(key) && !FHIR_DATE_TIME.test(text)) {
        // A date that is none (`0000`, `-08-01-01T00:00:00Z`): its valid part, or nothing.
        const valid = validPrefix(text);
        if (valid === undefined) delete record[key];
        else record[key] = valid;
        removed.any = true;
        if (valid === undefined) continue;
      }
      let child = record[key];
      if (typeof child === 'object' && child !== null && !Array.isArray(child) && isXmlElement(child as Record<string, unknown>)) {
        // An XML element where FHIR has a string: its text, or nothing when it has none (a nullFlavor).
        child = record[key] = xmlText(child as Record<string, unknown>);
        removed.any = true;
      }
      if (isEmptyLeaf(child) || (typeof child === 'object' && prune(child, removed))) {
        delete record[key];
        removed.any = true;
      } else kept++;
    }
    return kept === 0;
  }
  return false;
}

/**
 * FHIR elements are never empty: the converter writes empty ones where the document had a nullFlavor (a
 * coding with no code, a goal target with no measure, a reference range with nothing in it, a section
 * with no entries), which FHIR forbids and readers show as blanks. They are removed, at any depth. So is
 * what the converter copies of the XML itself (`city: {"@_nullFlavor": "UNK"}`, a title with `#text` and
 * `@_xsi:type`): an element becomes its text, or nothing, and attribute keys go.
 */
export const emptyElementsPruned: RepairRule = {
  name: 'empty elements pruned',
  apply(resource) {
    const removed = { any: false };
    // The resource itself is never removed: it keeps its resourceType.
    prune(resource, removed);
    return removed.any;
  },
};

const DATA_ABSENT = 'http://hl7.org/fhir/StructureDefinition/data-absent-reason';

/**
 * What FHIR requires that a document may not give: a Composition's date and title (a document whose
 * effectiveTime is no date, or that has no title) and an immunization's date are marked absent, not
 * invented; an organization's
 * address is never a home address (org-2), so that use is dropped.
 */
export const requiredElementsMarkedAbsent: RepairRule = {
  name: 'required elements marked absent',
  apply(resource) {
    let changed = false;
    if (resource.resourceType === 'Composition') {
      for (const key of ['date', 'title']) {
        if (resource[key] !== undefined || resource[`_${key}`] !== undefined) continue;
        resource[`_${key}`] = { extension: [{ url: DATA_ABSENT, valueCode: 'unknown' }] };
        changed = true;
      }
    }
    if (resource.resourceType === 'Immunization' && !['occurrenceDateTime', 'occurrenceString', '_occurrenceDateTime'].some((key) => resource[key] !== undefined)) {
      resource._occurrenceDateTime = { extension: [{ url: DATA_ABSENT, valueCode: 'unknown' }] };
      changed = true;
    }
    if (resource.resourceType === 'Organization' && Array.isArray(resource.address)) {
      for (const address of resource.address as Record<string, unknown>[]) {
        if (address.use !== 'home') continue;
        delete address.use;
        changed = true;
      }
    }
    return changed;
  },
};

export const REPAIR_RULES: readonly RepairRule[] = [
  cvxSystem,
  entryIdentifiers,
  doseUnits,
  medicationHistoryIsAStatement,
  medicationDetails,
  // The three date rules in a row share one walk of each resource.
  partialDatesKeepPrecision,
  zonedTimestamps,
  impossibleDatesCutToValidPrecision,
  droppedDatesRestored,
  abatedConditionIsResolved,
  encounterClass,
  referenceRanges,
  nullFlavorValues,
  ...STATEMENT_DETAIL_RULES,
  conditionCategory,
  ...ASSERTION_RULES,
  practitionerQualification,
  lotNumberIsText,
  emptyElementsPruned,
  requiredElementsMarkedAbsent,
];

/**
 * Applies every rule to every resource; returns how many resources each rule changed, by rule name. When a
 * rule changed a resource's type, every reference to it (`Type/id`, at any depth of any resource) follows.
 */
export function repairConvertedResources(
  resources: readonly FhirResource[],
  rules: readonly RepairRule[] = REPAIR_RULES,
  context?: RepairContext,
): Record<string, number> {
  const changed: Record<string, number> = {};
  const retyped = new Map<string, string>();
  for (let index = 0; index < rules.length; ) {
    // Date rules in a row: each resource's dates are walked once for all of them.
    const batch: DateRepairRule[] = [];
    while (index < rules.length && isDateRule(rules[index]!)) batch.push(rules[index++] as DateRepairRule);
    if (batch.length > 0) {
      const counts = batch.map(() => 0);
      for (const resource of resources) {
        const rewrites = batch.map((rule) => rule.rewriteFor(resource, context));
        if (rewrites.every((rewrite) => rewrite === undefined)) continue;
        const identity = (text: string) => text;
        const hits = rewriteDates(resource, rewrites.map((rewrite) => rewrite ?? identity));
        hits.forEach((hit, i) => hit && counts[i]!++);
      }
      batch.forEach((rule, i) => (changed[rule.name] = counts[i]!));
      continue;
    }
    const rule = rules[index++]!;
    let count = 0;
    for (const resource of resources) {
      const before = resource.resourceType;
      if (!rule.apply(resource, context)) continue;
      count++;
      if (resource.resourceType !== before) retyped.set(`${before}/${resource.id}`, `${resource.resourceType}/${resource.id}`);
    }
    changed[rule.name] = count;
  }
  if (retyped.size > 0) for (const resource of resources) mapReferencesInPlace(resource, (reference) => retyped.get(reference));
  return changed;
}

