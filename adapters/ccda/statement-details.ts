/**
 * Details of results, problems, immunizations and encounters that the converter drops, each taken back
 * from the statement a resource was made of: a result given as a bound (`<5`, `>60`) or in a unit that is
 * not UCUM, a problem's body site, an immunization reported by someone other than who gave it, an
 * encounter's discharge disposition.
 */
import { codeableConceptOf } from './assertions.js';
import { attributeOf, firstNode, hasTemplate, isCcdaNode, listOf, textOf, type CcdaNode } from './ccda-nodes.js';
import { fhirDateTimeOf } from './hl7-time.js';
import { textOfElement } from './narrative.js';
import type { RepairContext, RepairRule } from './repair-rule.js';
import { encounterDiagnosisRoles } from './tree-rules.js';

const DIAGNOSIS_ROLE = 'http://terminology.hl7.org/CodeSystem/diagnosis-role';

type Json = Record<string, unknown>;
const UCUM = 'http://unitsofmeasure.org';

function quantity(node: CcdaNode | undefined): Json | undefined {
  const value = Number(attributeOf(node, 'value'));
  if (!node || attributeOf(node, 'nullFlavor') || !Number.isFinite(value) || attributeOf(node, 'value') === undefined) return undefined;
  const unit = attributeOf(node, 'unit');
  return { value, ...(unit && unit !== '1' ? { unit, system: UCUM, code: unit } : {}) };
}

/**
 * What an interval value (IVL_PQ) says: a bound below zero-or-nothing is "less than" the high (`<5` is
 * written 0..5), one with no high "more than" the low; a strict bound (`inclusive="false"`) is `<` or `>`.
 * Both bounds given are a range.
 */
function intervalValue(value: CcdaNode): Json | undefined {
  const low = firstNode(value.low);
  const high = firstNode(value.high);
  const lowQuantity = quantity(low);
  const highQuantity = quantity(high);
  const strict = (node: CcdaNode | undefined) => attributeOf(node, 'inclusive') === 'false';
  if (highQuantity && (!lowQuantity || lowQuantity.value === 0)) return { valueQuantity: { ...highQuantity, comparator: strict(high) ? '<' : '<=' } };
  if (lowQuantity && !highQuantity) return { valueQuantity: { ...lowQuantity, comparator: strict(low) ? '>' : '>=' } };
  if (lowQuantity && highQuantity) return { valueRange: { low: lowQuantity, high: highQuantity } };
  return undefined;
}

/**
 * A quantity whose unit is not UCUM is written with `nullFlavor="OTH"` and the measured value in a
 * translation, its unit as original text: the value and the unit as the laboratory sent them.
 */
function nonUcumValue(value: CcdaNode): Json | undefined {
  if (attributeOf(value, 'nullFlavor') !== 'OTH') return undefined;
  for (const translation of listOf(value.translation).filter(isCcdaNode)) {
    const number = Number(attributeOf(translation, 'value'));
    if (attributeOf(translation, 'value') === undefined || !Number.isFinite(number)) continue;
    const unit = textOf(firstNode(translation.originalText)) ?? textOf(translation.originalText);
    return { valueQuantity: { value: number, ...(unit ? { unit } : {}) } };
  }
  return undefined;
}

export const resultValues: RepairRule = {
  name: 'result bounds and units',
  apply(resource, context) {
    if (resource.resourceType !== 'Observation') return false;
    const value = firstNode(context?.sourceOf(resource)?.value);
    if (!value) return false;
    const type = attributeOf(value, 'xsi:type');
    const found = type === 'IVL_PQ' ? intervalValue(value) : type === 'PQ' ? nonUcumValue(value) : undefined;
    if (!found) return false;
    for (const key of Object.keys(resource)) if (key.startsWith('value') || key === 'dataAbsentReason') delete resource[key];
    Object.assign(resource, found);
    return true;
  },
};

const PROBLEM_OBSERVATION = '2.16.840.1.113883.10.20.22.4.4';

export const conditionBodySite: RepairRule = {
  name: 'condition body site',
  apply(resource, context) {
    if (resource.resourceType !== 'Condition' || resource.bodySite !== undefined) return false;
    const source = context?.sourceOf(resource);
    if (!source) return false;
    const isProblem = hasTemplate(source, PROBLEM_OBSERVATION);
    const observation = isProblem
      ? source
      : listOf(source.entryRelationship).flatMap((relationship) => (isCcdaNode(relationship) ? listOf(relationship.observation).filter(isCcdaNode) : [])).find((o) =>
          hasTemplate(o, PROBLEM_OBSERVATION),
        );
    const sites = listOf(observation?.targetSiteCode).filter(isCcdaNode).flatMap((site) => codeableConceptOf(site) ?? []);
    if (sites.length === 0) return false;
    resource.bodySite = sites;
    return true;
  },
};

/**
 * An immunization told by an informant (the patient, a relative, another record) is not from the one who
 * gave it: `primarySource` false. The converter leaves it unsaid.
 */
export const reportedImmunizations: RepairRule = {
  name: 'reported immunizations',
  apply(resource, context) {
    if (resource.resourceType !== 'Immunization') return false;
    const source = context?.sourceOf(resource);
    if (!source || listOf(source.informant).length === 0 || resource.primarySource === false) return false;
    resource.primarySource = false;
    return true;
  },
};

export const encounterDischarge: RepairRule = {
  name: 'encounter discharge disposition',
  apply(resource, context) {
    if (resource.resourceType !== 'Encounter') return false;
    const disposition = codeableConceptOf(firstNode(context?.sourceOf(resource)?.['sdtc:dischargeDispositionCode']));
    if (!disposition) return false;
    const hospitalization = (resource.hospitalization as Json | undefined) ?? {};
    if (JSON.stringify(hospitalization.dischargeDisposition) === JSON.stringify(disposition)) return false;
    resource.hospitalization = { ...hospitalization, dischargeDisposition: disposition };
    return true;
  },
};

/**
 * The converter calls every Condition an encounter names an admission diagnosis. A diagnosis the document
 * lists gets the role its act says (a discharge diagnosis is `DD`); a plain encounter diagnosis none.
 */
export const encounterDiagnosisRole: RepairRule = {
  name: 'encounter diagnosis role',
  apply(resource, context) {
    if (resource.resourceType !== 'Encounter' || !Array.isArray(resource.diagnosis) || !context) return false;
    let changed = false;
    for (const diagnosis of resource.diagnosis as Json[]) {
      const reference = (diagnosis.condition as { reference?: string } | undefined)?.reference;
      const id = reference?.startsWith('Condition/') ? reference.slice(10) : undefined;
      const source = id ? context.sourceOf({ resourceType: 'Condition', id }) : undefined;
      const role = source ? encounterDiagnosisRoles.get(source) : undefined;
      if (role === undefined) continue;
      const use = role === '' ? undefined : { coding: [{ system: DIAGNOSIS_ROLE, code: role, display: role === 'DD' ? 'Discharge diagnosis' : 'Admission diagnosis' }] };
      if (JSON.stringify(use) === JSON.stringify(diagnosis.use)) continue;
      if (use) diagnosis.use = use;
      else delete diagnosis.use;
      changed = true;
    }
    return changed;
  },
};

const FDA_UDI = '2.16.840.1.113883.3.3719';
const DEVICE_INSTANCE_TEMPLATE = '2.16.840.1.113883.10.20.22.4.37';

/** The device identifier (GS1 application identifier 01) of a UDI in its human-readable form. */
function deviceIdentifierOf(udi: string): string | undefined {
  const at = udi.indexOf('(01)');
  if (at < 0) return undefined;
  const digits = udi.slice(at + 4, at + 18);
  return /^\d{14}$/.test(digits) ? digits : undefined;
}

/**
 * A procedure's device (a Product Instance) is a Device: with a UDI, an implant the Procedure names as its
 * focal device; without, a device it used. The converter makes none, so an implant and its UDI were lost.
 */
export const implantedDevices: RepairRule = {
  name: 'implanted devices',
  apply(resource, context) {
    if (resource.resourceType !== 'Procedure' || !context?.add) return false;
    const source = context.sourceOf(resource);
    // A procedure not done ("no implanted devices") put no device in the patient.
    if (!source || attributeOf(source, 'negationInd') === 'true') return false;
    const roles = listOf(source.participant)
      .filter((participant) => isCcdaNode(participant) && participant['@_typeCode'] === 'DEV')
      .flatMap((participant) => listOf((participant as CcdaNode).participantRole).filter(isCcdaNode))
      .filter((role) => hasTemplate(role, DEVICE_INSTANCE_TEMPLATE) || firstNode(role.playingDevice));
    if (roles.length === 0) return false;
    const patient = resource.subject;
    const focal = roles.map((role, index) => {
      const ids = listOf(role.id).filter(isCcdaNode);
      const udi = ids.find((id) => attributeOf(id, 'root') === FDA_UDI && attributeOf(id, 'extension'));
      const carrier = udi ? attributeOf(udi, 'extension')! : undefined;
      const deviceIdentifier = carrier ? deviceIdentifierOf(carrier) : undefined;
      const type = codeableConceptOf(firstNode(firstNode(role.playingDevice)?.code));
      // The device is known by its UDI and kind: a product instance's other ids are a document's own (a bare
      // UUID is even rewritten per document), so the same device from two documents would not be one.
      const id = context.add!(`device:${resource.id}:${index}`, {
        resourceType: 'Device',
        ...(carrier ? { udiCarrier: [{ ...(deviceIdentifier ? { deviceIdentifier } : {}), issuer: 'http://hl7.org/fhir/NamingSystem/fda-udi', jurisdiction: 'http://hl7.org/fhir/NamingSystem/fda-udi', carrierHRF: carrier }] } : {}),
        ...(type ? { type } : {}),
        ...(patient ? { patient } : {}),
      });
      return { reference: `Device/${id}`, implant: carrier !== undefined };
    });
    // A device with a UDI is one the procedure put in or changed (an implant); others were used (a colonoscope).
    const next: Json = {};
    const implants = focal.filter((device) => device.implant).map((device) => ({ manipulated: { reference: device.reference } }));
    const used = focal.filter((device) => !device.implant).map((device) => ({ reference: device.reference }));
    if (implants.length > 0) next.focalDevice = implants;
    if (used.length > 0) next.usedReference = used;
    if (JSON.stringify({ focalDevice: resource.focalDevice, usedReference: resource.usedReference }) === JSON.stringify({ focalDevice: next.focalDevice, usedReference: next.usedReference })) return false;
    Object.assign(resource, next);
    return true;
  },
};

/** Planned statements (Plan of Treatment): a planned act, encounter, procedure or observation. */
const PLANNED = ['39', '40', '41', '44'].map((suffix) => `2.16.840.1.113883.10.20.22.4.${suffix}`);
const GOAL_OBSERVATION = '2.16.840.1.113883.10.20.22.4.121';
/** Moods of a statement that is not a record of something done: intended, requested, promised, proposed. */
const PLAN_MOODS: Record<string, string> = { INT: 'plan', RQO: 'order', PRMS: 'directive', PRP: 'proposal', ARQ: 'order', APT: 'order' };
const REQUEST_STATUS: Record<string, string> = { active: 'active', new: 'draft', completed: 'completed', cancelled: 'revoked', aborted: 'revoked', held: 'on-hold', suspended: 'on-hold', nullified: 'entered-in-error' };

/**
 * A planned or requested procedure, test or act is a ServiceRequest, not a Procedure, Observation or
 * Goal: the converter made "planned appendectomy" a Procedure in progress and "planned EKG" a Goal, which
 * read as things done or aimed at. A negated plan is a request not to do it. A planned encounter is an
 * Encounter whose status is `planned`, not one in progress.
 */
export const plannedStatementsAreRequests: RepairRule = {
  name: 'planned statements are requests',
  apply(resource, context) {
    if (!['Procedure', 'Observation', 'Goal', 'Encounter'].includes(resource.resourceType)) return false;
    const source = context?.sourceOf(resource);
    if (!source) return false;
    const mood = attributeOf(source, 'moodCode') ?? 'EVN';
    const has = (root: string) => hasTemplate(source, root);
    // A goal (mood GOL) is a Goal, whatever other template it also declares.
    if (mood === 'GOL' || has(GOAL_OBSERVATION)) return false;
    const planned = PLANNED.some(has);
    if (!planned && PLAN_MOODS[mood] === undefined) return false;
    if (resource.resourceType === 'Encounter') {
      // FHIR has a planned encounter: the converter's "in progress" becomes that.
      if (resource.status === 'planned') return false;
      resource.status = 'planned';
      return true;
    }
    const code = codeableConceptOf(firstNode(source.code)) ?? narrativeCode(source, context);
    const time = firstNode(source.effectiveTime);
    const point = attributeOf(time, 'value');
    const low = attributeOf(firstNode(time?.low), 'value');
    const high = attributeOf(firstNode(time?.high), 'value');
    const occurrence = point ? fhirDateTimeOf(point) : undefined;
    const period = !point && (low || high) ? { ...(low && fhirDateTimeOf(low) ? { start: fhirDateTimeOf(low) } : {}), ...(high && fhirDateTimeOf(high) ? { end: fhirDateTimeOf(high) } : {}) } : undefined;
    const request: Json = {
      resourceType: 'ServiceRequest',
      id: resource.id,
      ...(resource.meta ? { meta: resource.meta } : {}),
      ...(resource.identifier ? { identifier: resource.identifier } : {}),
      ...(resource.extension ? { extension: resource.extension } : {}),
      status: REQUEST_STATUS[attributeOf(firstNode(source.statusCode), 'code') ?? ''] ?? 'unknown',
      intent: PLAN_MOODS[mood] ?? 'plan',
      ...(attributeOf(source, 'negationInd') === 'true' ? { doNotPerform: true } : {}),
      ...(code ? { code } : {}),
      subject: resource.subject ?? resource.patient,
      ...(occurrence ? { occurrenceDateTime: occurrence } : period && Object.keys(period).length > 0 ? { occurrencePeriod: period } : {}),
    };
    for (const key of Object.keys(resource)) delete resource[key];
    Object.assign(resource, request);
    return true;
  },
};

function narrativeCode(source: CcdaNode, context: RepairContext | undefined): Json | undefined {
  const text = textOfElement(firstNode(source.code)?.originalText, context?.narrative) ?? textOfElement(firstNode(source.text), context?.narrative);
  return text ? { text } : undefined;
}

/** A procedure's outcome, as an act the procedure is the subject of (a failed attempt, 103709008), or an outcome observation. */
export const procedureOutcome: RepairRule = {
  name: 'procedure outcome',
  apply(resource, context) {
    if (resource.resourceType !== 'Procedure' || resource.outcome !== undefined) return false;
    const source = context?.sourceOf(resource);
    if (!source) return false;
    for (const relationship of listOf(source.entryRelationship).filter(isCcdaNode)) {
      if (relationship['@_typeCode'] !== 'SUBJ' || attributeOf(relationship, 'inversionInd') !== 'true') continue;
      for (const act of listOf(relationship.act).filter(isCcdaNode)) {
        const outcome = codeableConceptOf(firstNode(act.code));
        if (!outcome) continue;
        resource.outcome = outcome;
        return true;
      }
    }
    return false;
  },
};

export const STATEMENT_DETAIL_RULES: readonly RepairRule[] = [resultValues, conditionBodySite, reportedImmunizations, encounterDischarge, encounterDiagnosisRole, implantedDevices, plannedStatementsAreRequests, procedureOutcome];
