/**
 * The consolidated-data calls of the public API beside the query: the customer's own FHIR resources
 * added to the store (`PUT /patient/{id}/consolidated`), the count of what is stored per resource type,
 * and the patient's medical record summary (HTML or PDF) behind a short-lived URL.
 */
import type { CoreDeps } from '../deps.js';
import type { Account, ConsolidatedFilters } from '../domain/types.js';
import { getPatient } from '../entities/patients.js';
import { CoreError } from '../errors.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { issueSignedUrl } from '../signed-urls.js';
import { repairText } from '../text.js';
import { bundleOf, checkFilters, consolidatedResources, CONSOLIDATED_URL_VALIDITY_MS, medicalRecordContext } from './consolidated.js';
import { resourceKey } from './dedupe.js';
import { uploadFileName } from './document-reference.js';
import { storeFhirBundleDocument } from './fhir-documents.js';
import { inRenderSlot } from './render-slots.js';
import { newJob } from '../job-catalogue.js';
import { MAX_RESOURCES_PER_CALL } from '../../contract/limits.js';
import { requestTo } from '../../contract/endpoints.js';

/**
 * Resource types the consolidated store takes from a customer: clinical and administrative resources
 * about the patient. Not Patient (the patient is its demographics), nor Bundle or Binary (containers).
 */
export const CUSTOMER_RESOURCE_TYPES: ReadonlySet<string> = new Set([
  'Account', 'AllergyIntolerance', 'Appointment', 'AppointmentResponse', 'AuditEvent', 'Basic', 'BodyStructure', 'CarePlan', 'CareTeam',
  'ChargeItem', 'Claim', 'ClaimResponse', 'ClinicalImpression', 'Communication', 'CommunicationRequest', 'Composition', 'Condition', 'Consent',
  'Contract', 'Coverage', 'CoverageEligibilityRequest', 'CoverageEligibilityResponse', 'DetectedIssue', 'Device', 'DeviceRequest',
  'DeviceUseStatement', 'DiagnosticReport', 'DocumentManifest', 'DocumentReference', 'Encounter', 'EnrollmentRequest', 'EpisodeOfCare',
  'ExplanationOfBenefit', 'FamilyMemberHistory', 'Flag', 'Goal', 'GuidanceResponse', 'ImagingStudy', 'Immunization', 'ImmunizationEvaluation',
  'ImmunizationRecommendation', 'Invoice', 'List', 'Location', 'MeasureReport', 'Media', 'Medication', 'MedicationAdministration',
  'MedicationDispense', 'MedicationRequest', 'MedicationStatement', 'MolecularSequence', 'NutritionOrder', 'Observation', 'Organization',
  'Person', 'Practitioner', 'PractitionerRole', 'Procedure', 'Provenance', 'QuestionnaireResponse', 'RelatedPerson', 'RequestGroup',
  'ResearchSubject', 'RiskAssessment', 'ServiceRequest', 'Specimen', 'AdverseEvent', 'Task',
]);

const FHIR_ID = /^[A-Za-z0-9.-]{1,64}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(field: string, message: string): CoreError {
  return new CoreError('VALIDATION_FAILED', `${field}: ${message}`, { details: { field } });
}

/**
 * The resources of a customer's Bundle, checked: a Bundle with 1 to MAX_RESOURCES_PER_CALL entries, each
 * a resource of a type in CUSTOMER_RESOURCE_TYPES; an id, when given, a FHIR id unique in the Bundle (one
 * is made when absent). Throws VALIDATION_FAILED naming the entry.
 */
export function checkCustomerBundle(deps: Pick<CoreDeps, 'ids'>, body: unknown): FhirResource[] {
  if (!isObject(body) || body.resourceType !== 'Bundle') throw invalid('resourceType', 'must be Bundle');
  const entries = body.entry;
  if (!Array.isArray(entries) || entries.length === 0) throw invalid('entry', 'must hold at least one entry with a resource');
  if (entries.length > MAX_RESOURCES_PER_CALL) throw invalid('entry', `at most ${MAX_RESOURCES_PER_CALL} resources per call; send the rest in another`);
  const seen = new Set<string>();
  return entries.map((entry, index) => {
    const resource = isObject(entry) ? entry.resource : undefined;
    const where = `entry.${index}.resource`;
    if (!isObject(resource)) throw invalid(where, 'must be a FHIR resource');
    const type = resource.resourceType;
    if (typeof type !== 'string' || !CUSTOMER_RESOURCE_TYPES.has(type)) {
      throw invalid(`${where}.resourceType`, type === 'Patient' ? 'a Patient cannot be added: the patient is described by its demographics' : 'must be a FHIR resource type of patient data (e.g. Condition, Observation)');
    }
    if (resource.id !== undefined && (typeof resource.id !== 'string' || !FHIR_ID.test(resource.id))) {
      throw invalid(`${where}.id`, 'must be a FHIR id: 1 to 64 letters, digits, "-" or "."');
    }
    const checked = repairText({ ...resource, id: typeof resource.id === 'string' ? resource.id : deps.ids.next() }) as FhirResource;
    const key = resourceKey(checked);
    if (seen.has(key)) throw invalid(`${where}.id`, `${key} is in the Bundle twice`);
    seen.add(key);
    return checked;
  });
}

/**
 * `PUT /patient/{id}/consolidated`: the customer's resources join the patient's consolidated store, kept
 * as one uploaded document (a FHIR Bundle file) and deduplicated with what documents brought. Returns a
 * FHIR `transaction-response` Bundle: one entry per resource given, in order, `201 Created` with its
 * location, or `200 OK` with the location of the resource it merged into. References to a Patient are
 * references to this patient. Throws PATIENT_NOT_FOUND, VALIDATION_FAILED.
 */
export async function addPatientResources(deps: CoreDeps, account: Account, patientId: string, body: unknown) {
  const patient = await getPatient(deps, account.id, patientId);
  const resources = checkCustomerBundle(deps, body);
  const documentId = deps.ids.next();
  const folded = await storeFhirBundleDocument(deps, {
    accountId: account.id,
    patientId: patient.id,
    source: 'upload',
    fileName: uploadFileName(patient.id, documentId, 'resources.json'),
    description: 'FHIR resources added by the customer',
    type: { text: 'FHIR resources' },
    organizationIdentifiers: [],
    resources,
  });
  return {
    resourceType: 'Bundle' as const,
    type: 'transaction-response' as const,
    entry: resources.map((resource) => {
      const key = resourceKey(resource);
      const location = folded.locations.get(key) ?? key;
      return { response: { status: location === key ? '201 Created' : '200 OK', location } };
    }),
  };
}

/** `GET /patient/{id}/consolidated/count`: how many resources a consolidated query with these filters would hold, per type. */
export async function countPatientResources(deps: Pick<CoreDeps, 'storage'>, accountId: string, patientId: string, filters: ConsolidatedFilters) {
  const checked = checkFilters(filters);
  const patient = await getPatient(deps, accountId, patientId);
  const resources: Record<string, number> = {};
  const data = await consolidatedResources(deps, patient, checked);
  for (const resource of data) resources[resource.resourceType] = (resources[resource.resourceType] ?? 0) + 1;
  return {
    total: data.length,
    resources,
    filter: { resources: checked.resources ?? '', ...(checked.dateFrom ? { dateFrom: checked.dateFrom } : {}), ...(checked.dateTo ? { dateTo: checked.dateTo } : {}) },
  };
}

export type MedicalRecordFormat = 'html' | 'pdf';

export function medicalRecordPath(patientId: string, recordId: string, format: MedicalRecordFormat): string {
  return requestTo('downloadMedicalRecord', { id: patientId, recordId, file: `summary.${format}` }).path;
}

export function medicalRecordBlobKey(accountId: string, recordId: string, format: MedicalRecordFormat): string {
  return `${accountId}/medical-record/${recordId}/summary.${format}`;
}

/**
 * A medical record summary behind its short-lived URL (`summary.html` or `summary.pdf`): its bytes as a
 * stream and its media type. Throws FILE_NOT_FOUND for another file name, and once the file is no longer
 * kept.
 */
export async function medicalRecordFile(
  deps: Pick<CoreDeps, 'blob'>,
  accountId: string,
  recordId: string,
  file: string,
): Promise<{ stream: AsyncIterable<Uint8Array>; contentType: string }> {
  const format = file === 'summary.pdf' ? 'pdf' : file === 'summary.html' ? 'html' : undefined;
  if (!format) throw new CoreError('FILE_NOT_FOUND', 'No such file');
  const stream = await deps.blob.stream(medicalRecordBlobKey(accountId, recordId, format));
  if (!stream) throw new CoreError('FILE_NOT_FOUND', 'This summary is no longer kept; ask for a new one');
  return { stream, contentType: format === 'pdf' ? 'application/pdf' : 'text/html; charset=utf-8' };
}

/**
 * `GET /patient/{id}/medical-record`: the patient's consolidated data rendered for people (HTML or PDF),
 * written now and handed out as a URL valid 10 minutes; the file is deleted a while after. Throws
 * PATIENT_NOT_FOUND, VALIDATION_FAILED (conversionType), and NOT_FOUND when the patient has no data yet
 * (nothing to summarise).
 */
export async function medicalRecordUrl(deps: CoreDeps, accountId: string, patientId: string, conversionType: string | undefined): Promise<{ url: string }> {
  const patient = await getPatient(deps, accountId, patientId);
  const format = conversionType?.toLowerCase();
  if (format !== 'html' && format !== 'pdf') throw invalid('conversionType', 'must be html or pdf');
  // The data is read in the slot too: a render waiting for one holds no patient's data meanwhile.
  const bytes = await inRenderSlot(deps, async () => {
    const data = await consolidatedResources(deps, patient, {});
    if (data.length === 0) throw new CoreError('NOT_FOUND', 'The patient has no data to summarise yet; query documents or the networks first');
    return deps.renderer.render(bundleOf(data, 'collection'), format, medicalRecordContext(deps, patient));
  });
  const recordId = deps.ids.next();
  const key = medicalRecordBlobKey(accountId, recordId, format);
  await deps.blob.put(key, bytes, { contentType: format === 'pdf' ? 'application/pdf' : 'text/html; charset=utf-8' });
  const { url, expiresAt } = issueSignedUrl(deps, { method: 'GET', path: medicalRecordPath(patient.id, recordId, format), accountId }, CONSOLIDATED_URL_VALIDITY_MS);
  await deps.queue.enqueue(newJob('documents.delete-blob', { key }, { runAt: new Date(expiresAt.getTime() + CONSOLIDATED_URL_VALIDITY_MS).toISOString(), lane: 'background' }));
  return { url };
}
