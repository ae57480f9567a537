/**
 * The patient's documents as listed (`GET /medical/v1/document?patientId=`): their FHIR DocumentReferences,
 * narrowed by day and by words, or the stored documents behind them (the public API's `output=dto`).
 */
import type { CoreDeps } from '../deps.js';
import type { DocumentRecord } from '../domain/types.js';
import { getPatient } from '../entities/patients.js';
import type { FhirResource } from '../ports/ccda.port.js';

export interface DocumentListFilters {
  /** A day (YYYY-MM-DD, anything after the tenth character aside): references dated before it are left out. */
  dateFrom?: string | undefined;
  /** A day as `dateFrom`: references dated after it are left out. */
  dateTo?: string | undefined;
  /** Words a reference's description, type or attachment title must hold, case aside. */
  content?: string | undefined;
  /** At most this many references; all when not given. */
  count?: number | undefined;
}

function textOfDocumentReference(resource: FhirResource): string {
  const type = resource.type as { text?: string; coding?: { display?: string }[] } | undefined;
  const attachment = (resource.content as { attachment?: { title?: string } }[] | undefined)?.[0]?.attachment;
  return [resource.description, type?.text, ...(type?.coding ?? []).map((c) => c.display), attachment?.title].filter(Boolean).join(' ').toLowerCase();
}

/**
 * The patient's DocumentReferences by id, those that pass `filters`: with a day bound given, an undated
 * reference is left out.
 * @throws CoreError `PATIENT_NOT_FOUND` when the patient is missing or another account's.
 */
export async function listDocumentReferences(deps: Pick<CoreDeps, 'storage'>, accountId: string, patientId: string, filters: DocumentListFilters): Promise<FhirResource[]> {
  await getPatient(deps, accountId, patientId);
  const [from, to] = [filters.dateFrom?.slice(0, 10), filters.dateTo?.slice(0, 10)];
  const needle = filters.content?.toLowerCase();
  return (await deps.storage.fhirResources.listByPatient(accountId, patientId, ['DocumentReference']))
    .map((record) => record.resource as FhirResource)
    .filter((resource) => {
      const date = typeof resource.date === 'string' ? resource.date.slice(0, 10) : undefined;
      if (from && (!date || date < from)) return false;
      if (to && (!date || date > to)) return false;
      return !needle || textOfDocumentReference(resource).includes(needle);
    })
    .slice(0, filters.count);
}

/**
 * The patient's stored documents behind `references`, in the order of the references; a reference that is
 * not one of them is left out. Throws nothing.
 */
export async function documentsOfReferences(deps: Pick<CoreDeps, 'storage'>, accountId: string, patientId: string, references: readonly FhirResource[]): Promise<DocumentRecord[]> {
  const documents = await deps.storage.documents.listByPatient(accountId, patientId);
  const byId = new Map(documents.map((document) => [document.id, document]));
  return references.flatMap((resource) => (byId.has(resource.id!) ? [byId.get(resource.id!)!] : []));
}
