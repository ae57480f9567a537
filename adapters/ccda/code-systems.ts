/**
 * HL7 code system OIDs as the canonical URIs FHIR names them by. A coding whose system is `urn:oid:X` where
 * FHIR has a URI for X is not recognised by a reader or a query by system (ICD-10-CM written as an OID is,
 * to a FHIR client, some other code system). One table, tested; an OID not in it stays `urn:oid:`, which is
 * valid FHIR for a system without a URI.
 */

const V3 = 'http://terminology.hl7.org/CodeSystem/v3-';

const BY_OID: Record<string, string> = {
  '2.16.840.1.113883.6.96': 'http://snomed.info/sct',
  '2.16.840.1.113883.6.5': 'http://snomed.info/sct',
  '2.16.840.1.113883.6.1': 'http://loinc.org',
  '2.16.840.1.113883.6.88': 'http://www.nlm.nih.gov/research/umls/rxnorm',
  '2.16.840.1.113883.12.292': 'http://hl7.org/fhir/sid/cvx',
  '2.16.840.1.113883.6.59': 'http://hl7.org/fhir/sid/cvx',
  '2.16.840.1.113883.12.227': 'http://hl7.org/fhir/sid/mvx',
  '2.16.840.1.113883.6.12': 'http://www.ama-assn.org/go/cpt',
  '2.16.840.1.113883.6.103': 'http://hl7.org/fhir/sid/icd-9-cm',
  '2.16.840.1.113883.6.104': 'http://hl7.org/fhir/sid/icd-9-cm',
  '2.16.840.1.113883.6.2': 'http://hl7.org/fhir/sid/icd-9-cm',
  '2.16.840.1.113883.6.90': 'http://hl7.org/fhir/sid/icd-10-cm',
  '2.16.840.1.113883.6.3': 'http://hl7.org/fhir/sid/icd-10',
  '2.16.840.1.113883.6.4': 'http://www.cms.gov/Medicare/Coding/ICD10',
  '2.16.840.1.113883.6.69': 'http://hl7.org/fhir/sid/ndc',
  '2.16.840.1.113883.6.13': 'http://ada.org/cdt',
  '2.16.840.1.113883.6.285': 'http://www.cms.gov/Medicare/Coding/HCPCSReleaseCodeSets',
  '2.16.840.1.113883.6.14': 'http://www.cms.gov/Medicare/Coding/HCPCSReleaseCodeSets',
  '2.16.840.1.113883.6.8': 'http://unitsofmeasure.org',
  '2.16.840.1.113883.6.101': 'http://nucc.org/provider-taxonomy',
  '2.16.840.1.113883.5.53': 'http://nucc.org/provider-taxonomy',
  '1.2.840.10008.2.16.4': 'http://dicom.nema.org/resources/ontology/DCM',
  '2.16.840.1.113883.4.9': 'http://fdasis.nlm.nih.gov',
  '2.16.840.1.113883.3.26.1.1': 'http://ncithesaurus-stage.nci.nih.gov',
  '2.16.840.1.113883.3.26.1.2': 'http://ncimeta.nci.nih.gov',
  '2.16.840.1.113883.3.26.1.5': 'http://hl7.org/fhir/ndfrt',
  '2.16.840.1.113883.6.345': 'http://va.gov/terminology/medrt',
  '2.16.840.1.113883.6.24': 'urn:iso:std:iso:11073:10101',
  '2.16.840.1.113883.6.121': 'urn:ietf:bcp:47',
  '2.16.840.1.113883.6.259': 'https://www.cdc.gov/nhsn/cdaportal/terminology/codesystem/hsloc.html',
  '2.16.840.1.113883.6.301.5': 'https://www.nubc.org/CodeSystem/PatDischargeStatus',
  '2.16.840.1.113883.3.221.5': 'https://nahdo.org/sopt',
  '2.16.840.1.113883.6.238': 'urn:oid:2.16.840.1.113883.6.238',
  '1.0.639.1': 'urn:ietf:bcp:47',
  '1.0.639.2': 'urn:ietf:bcp:47',
  '1.0.3166.1.2.2': 'urn:iso:std:iso:3166',
  '2.16.840.1.113883.5.1': V3 + 'AdministrativeGender',
  '2.16.840.1.113883.5.2': V3 + 'MaritalStatus',
  '2.16.840.1.113883.5.4': V3 + 'ActCode',
  '2.16.840.1.113883.5.6': V3 + 'ActClass',
  '2.16.840.1.113883.5.7': V3 + 'ActPriority',
  '2.16.840.1.113883.5.8': V3 + 'ActReason',
  '2.16.840.1.113883.5.14': V3 + 'ActStatus',
  '2.16.840.1.113883.5.25': V3 + 'Confidentiality',
  '2.16.840.1.113883.5.45': V3 + 'EntityNameUse',
  '2.16.840.1.113883.5.50': V3 + 'Ethnicity',
  '2.16.840.1.113883.5.60': V3 + 'LanguageAbilityMode',
  '2.16.840.1.113883.5.61': V3 + 'LanguageAbilityProficiency',
  '2.16.840.1.113883.5.79': V3 + 'mediatypes',
  '2.16.840.1.113883.5.83': V3 + 'ObservationInterpretation',
  '2.16.840.1.113883.5.88': V3 + 'ParticipationFunction',
  '2.16.840.1.113883.5.89': V3 + 'ParticipationSignature',
  '2.16.840.1.113883.5.90': V3 + 'ParticipationType',
  '2.16.840.1.113883.5.104': V3 + 'Race',
  '2.16.840.1.113883.5.110': V3 + 'RoleClass',
  '2.16.840.1.113883.5.111': V3 + 'RoleCode',
  '2.16.840.1.113883.5.112': V3 + 'RouteOfAdministration',
  '2.16.840.1.113883.5.139': V3 + 'TimingEvent',
  '2.16.840.1.113883.5.143': V3 + 'TelecommunicationAddressUse',
  '2.16.840.1.113883.5.1001': V3 + 'ActMood',
  '2.16.840.1.113883.5.1002': V3 + 'ActRelationshipType',
  '2.16.840.1.113883.5.1008': V3 + 'NullFlavor',
  '2.16.840.1.113883.5.1063': V3 + 'ObservationValue',
  '2.16.840.1.113883.5.1076': V3 + 'ReligiousAffiliation',
  '2.16.840.1.113883.5.1119': V3 + 'AddressUse',
  '2.16.840.1.113883.5.1052': V3 + 'ActSite',
};

/** HL7 v2 tables (`2.16.840.1.113883.12.N`) have FHIR URIs of one pattern; CVX and MVX, above, are exceptions. */
const V2_TABLE = /^2\.16\.840\.1\.113883\.12\.(\d{1,4})$/;

/** The FHIR URI of a code system named by its OID; undefined when FHIR has none (the OID then stays `urn:oid:`). */
export function codeSystemUri(oid: string): string | undefined {
  const known = BY_OID[oid];
  if (known !== undefined) return known;
  const table = V2_TABLE.exec(oid);
  return table ? `http://terminology.hl7.org/CodeSystem/v2-${table[1]!.padStart(4, '0')}` : undefined;
}

/** A coding's system written as FHIR writes it: `urn:oid:X` (or a bare OID) becomes X's URI when it has one. */
export function canonicalSystem(system: string): string {
  const oid = system.startsWith('urn:oid:') ? system.slice(8) : /^\d+(\.\d+)+$/.test(system) ? system : undefined;
  if (oid === undefined) return system;
  return codeSystemUri(oid) ?? `urn:oid:${oid}`;
}
