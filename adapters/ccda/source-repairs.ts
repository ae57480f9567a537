/**
 * Repairs that read the C-CDA element a resource was made of (found through its link, see
 * normalise-ccda.ts): what the converter dropped or misread is taken back from the document itself.
 * Each rule changes a resource only when its source says something the resource gets wrong or leaves out.
 */
import type { FhirResource } from '../../core/ports/ccda.port.js';
import { attributeOf, hasTemplate, isCcdaNode, listOf, type CcdaNode } from './ccda-nodes.js';
import { converterRenderings, fhirDateTimeOf } from './hl7-time.js';
import { subjectOf } from './assertions.js';
import { dateRule, type RepairRule } from './repair-rule.js';
import { HEALTH_CONCERN_ACT, RISK_CONCERN_ACT, wrappingConcerns } from './tree-rules.js';

type Json = Record<string, unknown>;
type Identifier = { system?: string; value?: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UCUM = 'http://unitsofmeasure.org';
const CONDITION_CATEGORY = 'http://terminology.hl7.org/CodeSystem/condition-category';
const ACT_CODE = 'http://terminology.hl7.org/CodeSystem/v3-ActCode';
const ACT_CODE_OID = '2.16.840.1.113883.5.4';
const DATA_ABSENT_REASON = 'http://terminology.hl7.org/CodeSystem/data-absent-reason';
const NULL_FLAVOR = 'http://terminology.hl7.org/CodeSystem/v3-NullFlavor';
/** v3 NullFlavor's "unknown". */
const UNKNOWN = 'UNK';
/** The class of an encounter when nothing in the document gives it. */
const UNKNOWN_CLASS = { system: NULL_FLAVOR, code: UNKNOWN, display: 'unknown' } as const;
/** Roots FHIR names by a URI of their own. */
const KNOWN_ROOTS: Record<string, string> = {
  '2.16.840.1.113883.4.6': 'http://hl7.org/fhir/sid/us-npi',
  '2.16.840.1.113883.4.1': 'http://hl7.org/fhir/sid/us-ssn',
};

/** An HL7 v3 id as a FHIR Identifier (root + extension, or a root alone as a URI); undefined for a nullFlavor. */
export function identifierOf(id: unknown): { system: string; value: string } | undefined {
  const root = attributeOf(id, 'root');
  if (!root || attributeOf(id, 'nullFlavor')) return undefined;
  const extension = attributeOf(id, 'extension');
  if (extension) return { system: KNOWN_ROOTS[root] ?? (UUID.test(root) ? `urn:uuid:${root.toLowerCase()}` : `urn:oid:${root}`), value: extension };
  return { system: 'urn:ietf:rfc:3986', value: UUID.test(root) ? `urn:uuid:${root.toLowerCase()}` : `urn:oid:${root}` };
}


const firstTime = (element: CcdaNode | undefined): CcdaNode | undefined => listOf(element?.effectiveTime).find(isCcdaNode);
const valueOf = (node: unknown, key?: string): string | undefined => attributeOf(key === undefined ? node : isCcdaNode(node) ? node[key] : undefined, 'value');

/**
 * Entries are traceable: each resource made of an entry carries the entry's ids as identifiers (for a
 * concern act, the act's and its observation's), written as FHIR writes HL7 ids. The converter writes
 * none for a medication, and drops every id that is a bare UUID (most of the HL7 examples' ids); an id
 * with a root and no extension came out with no value, which identifies nothing.
 */
export const entryIdentifiers: RepairRule = {
  name: 'entry identifiers',
  apply(resource, context) {
    const source = context?.sourceOf(resource);
    const current = Array.isArray(resource.identifier) ? (resource.identifier as Identifier[]) : [];
    if (!source && current.every((id) => typeof id.value === 'string' && id.value !== '' && typeof id.system === 'string' && !id.system.startsWith('urn:oid:'))) return false;
    // The converter names every root `urn:oid:`, a UUID root included.
    const valid = current
      .filter((id) => typeof id.value === 'string' && id.value !== '' && typeof id.system === 'string')
      .map((id) => (id.system!.startsWith('urn:oid:') && UUID.test(id.system!.slice(8)) ? { ...id, system: `urn:uuid:${id.system!.slice(8).toLowerCase()}` } : id));
    const rootOnly = current
      .filter((id) => (id.value === undefined || id.value === '') && typeof id.system === 'string' && id.system.startsWith('urn:oid:'))
      .map((id) => ({ system: 'urn:ietf:rfc:3986', value: id.system! }));
    // Only a concern is identified by its subject's ids too: the problem a procedure is about is not the procedure.
    const concern = resource.resourceType === 'Condition' || resource.resourceType === 'AllergyIntolerance';
    const fromSource = source
      ? [source, concern ? subjectOf(source) : undefined].flatMap((element) => (element ? context!.idsOf(element).map(identifierOf) : [])).filter((id) => id !== undefined)
      : [];
    const seen = new Set<string>();
    const identifiers = [...valid, ...rootOnly, ...fromSource].filter((id) => {
      const key = `${id.system}|${id.value}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    if (identifiers.length === current.length && identifiers.every((id, i) => id === current[i])) return false;
    if (identifiers.length > 0) resource.identifier = identifiers;
    else delete resource.identifier;
    return true;
  },
};

const STATEMENT_STATUS: Record<string, string> = {
  active: 'active',
  completed: 'completed',
  stopped: 'stopped',
  cancelled: 'stopped',
  'on-hold': 'on-hold',
  'entered-in-error': 'entered-in-error',
  draft: 'intended',
  unknown: 'unknown',
};

/** An HL7 interval or point in time as a FHIR effective[x]: `{effectivePeriod}` or `{effectiveDateTime}`. */
function effectiveOf(time: CcdaNode | undefined, prefix: string): Json {
  const point = fhirDateTimeOf(valueOf(time));
  if (point) return { [`${prefix}DateTime`]: point };
  const start = fhirDateTimeOf(valueOf(time, 'low'));
  const end = fhirDateTimeOf(valueOf(time, 'high'));
  if (!start && !end) return {};
  return { [`${prefix}Period`]: { ...(start ? { start } : {}), ...(end ? { end } : {}) } };
}

/**
 * Medication history is a statement, not an order: a Medication Activity in the event mood (EVN: the
 * patient took or takes it) becomes a MedicationStatement with the time it covers; the converter makes
 * every one a MedicationRequest with intent `order`. Activities in an intent mood stay requests. A negated
 * activity (the patient did not take it) is `not-taken`.
 */
export const medicationHistoryIsAStatement: RepairRule = {
  name: 'medication history is a statement',
  apply(resource, context) {
    if (resource.resourceType !== 'MedicationRequest') return false;
    const source = context?.sourceOf(resource);
    if (!source || (attributeOf(source, 'moodCode') ?? 'EVN') !== 'EVN') return false;
    const { intent: _intent, authoredOn, dispenseRequest: _dispense, dosageInstruction, status, meta, requester: _requester, ...rest } = resource;
    const profiles = ((meta as { profile?: string[] } | undefined)?.profile ?? []).filter((profile) => !/medicationrequest/i.test(profile));
    const { profile: _profile, ...otherMeta } = (meta as Json | undefined) ?? {};
    const negated = attributeOf(source, 'negationInd') === 'true';
    const statement: FhirResource = {
      ...rest,
      resourceType: 'MedicationStatement',
      ...(Object.keys(otherMeta).length > 0 || profiles.length > 0 ? { meta: { ...otherMeta, ...(profiles.length > 0 ? { profile: profiles } : {}) } } : {}),
      status: negated ? 'not-taken' : (STATEMENT_STATUS[String(status)] ?? 'unknown'),
      ...effectiveOf(firstTime(source), 'effective'),
      ...(authoredOn ? { dateAsserted: authoredOn } : {}),
      ...(dosageInstruction ? { dosage: dosageInstruction } : {}),
    };
    for (const key of Object.keys(resource)) delete resource[key];
    Object.assign(resource, statement);
    return true;
  },
};

/** C-CDA units that are not UCUM as written. */
const UCUM_OF: Record<string, string> = { mcg: 'ug' };

/**
 * Doses keep the document's unit: the converter writes every dose in `[IU]` (atenolol 1 -> 1 [IU],
 * propofol 20 mg/mL -> 20 [IU]). The unit is taken from the activity's doseQuantity; a dose without one
 * (or with `1`) is a count, with no unit.
 */
export const doseUnits: RepairRule = {
  name: 'dose units',
  apply(resource, context) {
    if (resource.resourceType !== 'MedicationRequest' && resource.resourceType !== 'MedicationStatement') return false;
    const source = context?.sourceOf(resource);
    const value = attributeOf(source?.doseQuantity, 'value');
    if (!source || value === undefined) return false;
    const unit = attributeOf(source.doseQuantity, 'unit');
    let changed = false;
    for (const key of ['dosageInstruction', 'dosage']) {
      for (const dosage of (resource[key] as { doseAndRate?: { doseQuantity?: Json }[] }[] | undefined) ?? []) {
        for (const doseAndRate of dosage.doseAndRate ?? []) {
          const quantity = doseAndRate.doseQuantity;
          if (!quantity || Number(value) !== quantity.value) continue;
          const wanted: Json = { value: quantity.value, ...(unit !== undefined && unit !== '1' ? { unit, system: UCUM, code: UCUM_OF[unit] ?? unit } : {}) };
          if (JSON.stringify(wanted) === JSON.stringify(quantity)) continue;
          doseAndRate.doseQuantity = wanted;
          changed = true;
        }
      }
    }
    return changed;
  },
};

const TIME_ELEMENTS = new Set(['effectiveTime', 'low', 'high', 'center', 'time', 'birthTime']);

/** Every timestamp of an element (not of the statements nested in it), in document order. */
function timestampsIn(node: unknown, found: string[] = [], key = ''): string[] {
  if (Array.isArray(node)) {
    for (const item of node) timestampsIn(item, found, key);
  } else if (typeof node === 'object' && node !== null) {
    const record = node as Record<string, unknown>;
    if (TIME_ELEMENTS.has(key)) {
      const value = record['@_value'];
      if (typeof value === 'string' && value !== '') found.push(value);
    }
    for (const child in record) {
      const value = record[child];
      // Nested statements (entry relationships, components) are resources of their own, with their own dates.
      if (typeof value === 'object' && value !== null && child.charCodeAt(0) !== 64 && child !== 'entryRelationship' && child !== 'component') timestampsIn(value, found, child);
    }
  }
  return found;
}

/**
 * Dates keep the precision the document gives: the converter writes a year or a month (`199911`) as the
 * first of January (`1999-01-01T00:00:00Z`), losing the month and claiming a day and a time it does not
 * know, and a day (`20110203`) as midnight UTC. Each such date of a resource is written back as `1999-11`
 * (or `2011-02-03`), unless a timestamp of the same element with a time also renders as the same text
 * (then the value is left, as it cannot be told apart).
 */
export const partialDatesKeepPrecision = dateRule('partial dates keep their precision', (resource, context) => {
  const source = context?.sourceOf(resource);
  if (!source) return undefined;
  let partial: Map<string, string> | undefined;
  // Built on the first date that may be such a rendering (most dates are not): a midnight in UTC, or a first of January.
  return (text) => {
    if (!text.endsWith('T00:00:00Z') && !(text.length === 10 && text.endsWith('-01-01'))) return text;
    partial ??= partialRenderings(source);
    return partial.get(text) ?? text;
  };
});

/** What the converter wrote for each of the entry's timestamps shorter than a time, and what it means. */
function partialRenderings(source: CcdaNode): Map<string, string> {
  // The entry's own timestamps, and for a concern its subject observation's (the problem it holds).
  const subject = subjectOf(source);
  const timestamps = timestampsIn(source, subject ? timestampsIn(subject) : []);
  const isPartial = (ts: string) => (ts.length === 4 || ts.length === 6 || ts.length === 8) && /^\d+$/.test(ts);
  const partial = new Map<string, string>();
  for (const ts of timestamps) {
    if (!isPartial(ts)) continue;
    const { dateTime, date } = converterRenderings(ts);
    const precise = fhirDateTimeOf(ts);
    if (precise) partial.set(dateTime, precise).set(date, precise);
  }
  if (partial.size === 0) return partial;
  for (const ts of timestamps) {
    if (isPartial(ts)) continue;
    const { dateTime, date } = converterRenderings(ts);
    partial.delete(dateTime);
    partial.delete(date);
  }
  return partial;
}

/**
 * Dates the converter drops are restored from the entry: a procedure's time when it is a single point
 * (the converter reads only an interval for a procedure, only a point for a procedure act), an
 * encounter's single time, an observation's interval (a social history observation's "since"), an
 * immunization's or a problem's time when written as an interval or a point the converter does not read.
 */
export const droppedDatesRestored: RepairRule = {
  name: 'dropped dates restored',
  apply(resource, context) {
    const source = context?.sourceOf(resource);
    if (!source) return false;
    const has = (...keys: string[]) => keys.some((key) => resource[key] !== undefined);
    const time = firstTime(source);
    let restored: Json = {};
    switch (resource.resourceType) {
      case 'Procedure':
        if (!has('performedDateTime', 'performedPeriod')) restored = effectiveOf(time, 'performed');
        break;
      case 'Observation':
        if (!has('effectiveDateTime', 'effectivePeriod', 'effectiveInstant')) restored = effectiveOf(time, 'effective');
        break;
      case 'Encounter': {
        const point = fhirDateTimeOf(valueOf(time));
        if (resource.period === undefined && point) restored = { period: { start: point, end: point } };
        break;
      }
      case 'Immunization':
        if (!has('occurrenceDateTime', 'occurrenceString')) {
          const when = fhirDateTimeOf(valueOf(time) ?? valueOf(time, 'low') ?? valueOf(time, 'center'));
          if (when) restored = { occurrenceDateTime: when };
        }
        break;
      case 'Condition': {
        const observation = subjectOf(source) ?? source;
        const onset = fhirDateTimeOf(valueOf(firstTime(observation)));
        if (!has('onsetDateTime', 'onsetPeriod') && onset) restored = { onsetDateTime: onset };
        break;
      }
    }
    if (Object.keys(restored).length === 0) return false;
    Object.assign(resource, restored);
    return true;
  },
};

/** v3 ActCode encounter classes. */
const ENCOUNTER_CLASSES: Record<string, string> = {
  AMB: 'ambulatory',
  EMER: 'emergency',
  FLD: 'field',
  HH: 'home health',
  IMP: 'inpatient encounter',
  ACUTE: 'inpatient acute',
  NONAC: 'inpatient non-acute',
  OBSENC: 'observation encounter',
  PRENC: 'pre-admission',
  SS: 'short stay',
  VR: 'virtual',
};

/** CPT evaluation and management ranges, by the class of encounter they bill. */
const CPT_CLASSES: [number, number, string][] = [
  [99201, 99215, 'AMB'], // office or other outpatient
  [99221, 99239, 'IMP'], // hospital inpatient
  [99241, 99245, 'AMB'], // office consultation
  [99251, 99255, 'IMP'], // inpatient consultation
  [99281, 99288, 'EMER'], // emergency department
  [99304, 99318, 'NONAC'], // nursing facility
  [99341, 99350, 'HH'], // home visit
  [99381, 99429, 'AMB'], // preventive medicine
];
const CPT_OID = '2.16.840.1.113883.6.12';

/** The v3 ActCode class of an encounter: an ActCode on the code or a translation, or the CPT visit range. */
function encounterClassOf(code: unknown): string | undefined {
  const codes = [code, ...listOf(isCcdaNode(code) ? code.translation : undefined)];
  for (const candidate of codes) {
    const value = attributeOf(candidate, 'code');
    if (value && attributeOf(candidate, 'codeSystem') === ACT_CODE_OID && ENCOUNTER_CLASSES[value]) return value;
  }
  for (const candidate of codes) {
    const value = Number(attributeOf(candidate, 'code'));
    if (attributeOf(candidate, 'codeSystem') !== CPT_OID || !Number.isInteger(value)) continue;
    const range = CPT_CLASSES.find(([low, high]) => value >= low && value <= high);
    if (range) return range[2];
  }
  return undefined;
}

/**
 * Encounter.class is a v3 ActCode class (AMB, IMP, EMER...): the converter writes the encounter's own code
 * there (CPT 99213 as an ActCode), which no reader understands. The class comes from an ActCode the
 * document gives, or from the CPT visit range; when neither says, it is `unknown` (v3 NullFlavor UNK),
 * never a guess. The encounter's code stays where it belongs, in Encounter.type.
 */
export const encounterClass: RepairRule = {
  name: 'encounter class',
  apply(resource, context) {
    if (resource.resourceType !== 'Encounter') return false;
    const source = context?.sourceOf(resource);
    if (!source) return false;
    const code = encounterClassOf(source.code);
    const wanted = code ? { system: ACT_CODE, code, display: ENCOUNTER_CLASSES[code] } : UNKNOWN_CLASS;
    if (JSON.stringify(resource.class) === JSON.stringify(wanted)) return false;
    resource.class = wanted;
    return true;
  },
};

function quantityOf(node: unknown): Json | undefined {
  const value = attributeOf(node, 'value');
  if (value === undefined || !Number.isFinite(Number(value))) return undefined;
  const unit = attributeOf(node, 'unit');
  return { value: Number(value), ...(unit && unit !== '1' ? { unit, system: UCUM, code: UCUM_OF[unit] ?? unit } : {}) };
}

function narrativeText(text: unknown): string | undefined {
  const raw = typeof text === 'string' ? text : isCcdaNode(text) && typeof text['#text'] === 'string' ? text['#text'] : undefined;
  return raw?.trim() || undefined;
}

/**
 * Reference ranges keep their numbers: the converter writes each range as an empty element (at most a
 * pointer into the narrative), so "12.0-15.5 g/dL" is lost. Each range is rebuilt from the document's
 * observationRange: low and high quantities from an IVL_PQ, its text when it has one.
 */
export const referenceRanges: RepairRule = {
  name: 'reference ranges',
  apply(resource, context) {
    if (resource.resourceType !== 'Observation') return false;
    const source = context?.sourceOf(resource);
    if (!source) return false;
    const ranges = listOf(source.referenceRange).flatMap((range) => {
      const observationRange = isCcdaNode(range) ? listOf(range.observationRange).find(isCcdaNode) : undefined;
      if (!observationRange) return [];
      const value = listOf(observationRange.value).find(isCcdaNode);
      const low = quantityOf(value?.low);
      const high = quantityOf(value?.high);
      const text = narrativeText(observationRange.text);
      const result = { ...(low ? { low } : {}), ...(high ? { high } : {}), ...(text ? { text } : {}) };
      return Object.keys(result).length > 0 ? [result] : [];
    });
    const current = resource.referenceRange;
    if (ranges.length === 0) {
      if (current === undefined) return false;
      delete resource.referenceRange;
      return true;
    }
    if (JSON.stringify(current) === JSON.stringify(ranges)) return false;
    resource.referenceRange = ranges;
    return true;
  },
};

/** HL7 nullFlavors as FHIR data-absent-reason codes. */
const ABSENT_REASON: Record<string, string> = {
  [UNKNOWN]: 'unknown',
  ASKU: 'asked-unknown',
  NAV: 'temp-unknown',
  NASK: 'not-asked',
  MSK: 'masked',
  NA: 'not-applicable',
  NI: 'unknown',
  OTH: 'unsupported',
  NINF: 'negative-infinity',
  PINF: 'positive-infinity',
  NP: 'unknown',
};

/**
 * A value the document does not know (`<value xsi:type="PQ" nullFlavor="NI"/>`) is a dataAbsentReason,
 * not a value: the converter writes an empty quantity (or a coding with no code), which reads as a
 * measurement of nothing and is invalid FHIR.
 */
export const nullFlavorValues: RepairRule = {
  name: 'null-flavored values',
  apply(resource, context) {
    if (resource.resourceType !== 'Observation') return false;
    const source = context?.sourceOf(resource);
    const value = listOf(source?.value).find(isCcdaNode);
    const nullFlavor = attributeOf(value, 'nullFlavor');
    if (!nullFlavor || resource.dataAbsentReason !== undefined) return false;
    for (const key of Object.keys(resource)) if (key.startsWith('value')) delete resource[key];
    const code = ABSENT_REASON[nullFlavor] ?? 'unknown';
    resource.dataAbsentReason = { coding: [{ system: DATA_ABSENT_REASON, code }] };
    return true;
  },
};

/** Acts that hold the diagnosis of an encounter, a stay or a procedure. */
const DIAGNOSIS_ACTS = ['33', '34', '51', '65', '80'].map((suffix) => `2.16.840.1.113883.10.20.22.4.${suffix}`);

/**
 * A Condition's category says where it was recorded: a health concern of a care plan is a
 * `health-concern`; an admission, discharge, pre- or postprocedure diagnosis, a finding or a complication
 * of a procedure an `encounter-diagnosis`; the converter calls every one a `problem-list-item`.
 */
export const conditionCategory: RepairRule = {
  name: 'condition category',
  apply(resource, context) {
    if (resource.resourceType !== 'Condition') return false;
    const source = context?.sourceOf(resource);
    if (!source) return false;
    const wanted =
      hasTemplate(source, HEALTH_CONCERN_ACT) || hasTemplate(source, RISK_CONCERN_ACT)
        ? ['health-concern', 'Health Concern']
        : wrappingConcerns.get(source) === 'encounter-diagnosis' || DIAGNOSIS_ACTS.some((root) => hasTemplate(source, root))
          ? ['encounter-diagnosis', 'Encounter Diagnosis']
          : undefined;
    if (!wanted) return false;
    const category = [{ coding: [{ system: CONDITION_CATEGORY, code: wanted[0], display: wanted[1] }] }];
    if (JSON.stringify(resource.category) === JSON.stringify(category)) return false;
    resource.category = category;
    return true;
  },
};
