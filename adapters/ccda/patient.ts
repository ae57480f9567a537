/**
 * The Patient as the document's recordTarget states it. The converter keeps one name's parts and one
 * address, and drops what tells a reader which is current: a name's or an address's use and the period it
 * was valid (a birth name, a previous name, a prior address), the patient's death, marital status and
 * languages. Names, addresses and those facts are taken back from the patientRole; what the converter
 * wrote right (identifiers, telecom, race and ethnicity) stays.
 */
import type { FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';
import { attributeOf, isCcdaNode, listOf, textOf, type CcdaNode } from './ccda-nodes.js';
import { fhirDateTimeOf } from './hl7-time.js';

type Json = Record<string, unknown>;

const texts = (value: unknown): string[] => listOf(value).flatMap((part) => textOf(part) ?? []);
const qualifiers = (value: unknown): string[] => listOf(value).flatMap((part) => (attributeOf(part, 'qualifier') ?? '').split(/\s+/).filter(Boolean));

/** HL7 v3 EntityNameUse as FHIR HumanName.use. */
const NAME_USE: Record<string, string> = { L: 'official', C: 'official', OR: 'official', P: 'nickname', A: 'nickname', I: 'anonymous', ASGN: 'usual', SRCH: 'usual', PHON: 'usual', SNDX: 'usual' };

/** An interval (validTime, useablePeriod) as a FHIR Period; undefined when it states no date. */
function periodOf(value: unknown): Json | undefined {
  const interval = listOf(value).find(isCcdaNode);
  if (!interval) return undefined;
  const start = fhirDateTimeOf(attributeOf(interval.low, 'value'));
  const end = fhirDateTimeOf(attributeOf(interval.high, 'value'));
  if (!start && !end) return undefined;
  return { ...(start ? { start } : {}), ...(end ? { end } : {}) };
}

function humanNameOf(name: CcdaNode): Json | undefined {
  const family = texts(name.family);
  const given = texts(name.given);
  const prefix = texts(name.prefix);
  const suffix = texts(name.suffix);
  const plain = textOf(name);
  if (family.length === 0 && given.length === 0 && prefix.length === 0 && suffix.length === 0 && !plain) return undefined;
  const uses = (attributeOf(name, 'use') ?? '').split(/\s+/);
  // A name whose parts are qualified as the birth name is the name the patient had before a change.
  const birthName = [...qualifiers(name.family), ...qualifiers(name.given)].includes('BR');
  const use = birthName ? 'maiden' : uses.map((code) => NAME_USE[code]).find((value) => value !== undefined);
  const period = periodOf(name.validTime);
  return {
    ...(use ? { use } : {}),
    ...(plain && family.length === 0 && given.length === 0 ? { text: plain } : {}),
    ...(family.length > 0 ? { family: family.join(' ') } : {}),
    ...(given.length > 0 ? { given } : {}),
    ...(prefix.length > 0 ? { prefix } : {}),
    ...(suffix.length > 0 ? { suffix } : {}),
    ...(period ? { period } : {}),
  };
}

/** HL7 v3 PostalAddressUse as FHIR Address.use (and type, for the physical and postal addresses). */
const ADDRESS_USE: Record<string, string> = { H: 'home', HP: 'home', HV: 'home', WP: 'work', DIR: 'work', PUB: 'work', TMP: 'temp', OLD: 'old', BAD: 'old' };
const ADDRESS_TYPE: Record<string, string> = { PHYS: 'physical', PST: 'postal' };

function addressOf(addr: CcdaNode): Json | undefined {
  const line = texts(addr.streetAddressLine);
  const parts: Json = {
    ...(line.length > 0 ? { line } : {}),
    ...Object.fromEntries(
      (['city', 'state', 'postalCode', 'country', 'county'] as const).flatMap((key) => {
        const value = textOf(listOf(addr[key])[0]);
        return value ? [[key === 'county' ? 'district' : key, value]] : [];
      }),
    ),
  };
  if (Object.keys(parts).length === 0) return undefined;
  const uses = (attributeOf(addr, 'use') ?? '').split(/\s+/);
  const use = uses.map((code) => ADDRESS_USE[code]).find((value) => value !== undefined);
  const type = uses.map((code) => ADDRESS_TYPE[code]).find((value) => value !== undefined);
  const period = periodOf(addr.useablePeriod);
  return { ...(use ? { use } : {}), ...(type ? { type } : {}), ...parts, ...(period ? { period } : {}) };
}

const MARITAL_STATUS = 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus';

/** Rewrites the bundle's Patient (in place) from the document's first recordTarget/patientRole. */
export function repairPatient(document: CcdaNode, bundle: FhirBundle): boolean {
  const target = listOf(document.recordTarget).find(isCcdaNode);
  const role = isCcdaNode(target) ? listOf(target.patientRole).find(isCcdaNode) : undefined;
  const person = role ? listOf(role.patient).find(isCcdaNode) : undefined;
  const patient = (bundle.entry ?? []).find((entry) => entry.resource?.resourceType === 'Patient')?.resource;
  if (!role || !person || !patient) return false;
  const next: Partial<FhirResource> = {};

  const names = listOf(person.name).filter(isCcdaNode).flatMap((name) => humanNameOf(name) ?? []);
  if (names.length > 0) next.name = names;
  const addresses = listOf(role.addr).filter(isCcdaNode).flatMap((addr) => addressOf(addr) ?? []);
  if (addresses.length > 0) next.address = addresses;
  else delete patient.address;

  const deceasedTime = fhirDateTimeOf(attributeOf(person['sdtc:deceasedTime'], 'value'));
  const deceasedInd = attributeOf(person['sdtc:deceasedInd'], 'value');
  if (deceasedTime) next.deceasedDateTime = deceasedTime;
  else if (deceasedInd === 'true' || deceasedInd === 'false') next.deceasedBoolean = deceasedInd === 'true';

  const marital = listOf(person.maritalStatusCode).find(isCcdaNode);
  const maritalCode = attributeOf(marital, 'nullFlavor') ? undefined : attributeOf(marital, 'code');
  if (maritalCode && patient.maritalStatus === undefined) {
    const display = attributeOf(marital, 'displayName');
    next.maritalStatus = { coding: [{ system: MARITAL_STATUS, code: maritalCode, ...(display ? { display } : {}) }] };
  }

  const communication = listOf(person.languageCommunication).flatMap((language) => {
    const code = attributeOf(isCcdaNode(language) ? listOf(language.languageCode)[0] : undefined, 'code');
    if (!code || !isCcdaNode(language)) return [];
    const preferred = attributeOf(listOf(language.preferenceInd)[0], 'value');
    return [{ language: { coding: [{ system: 'urn:ietf:bcp:47', code }] }, ...(preferred === 'true' || preferred === 'false' ? { preferred: preferred === 'true' } : {}) }];
  });
  if (communication.length > 0) next.communication = communication;

  const before = JSON.stringify(patient);
  Object.assign(patient, next);
  return JSON.stringify(patient) !== before;
}
