import type { FhirResource } from './ccda.port.js';
import type { HiePatientQuery } from './hie.port.js';
import type { NetworkDirectoryEntry } from './network-directory.js';

export type { NetworkDirectoryEntry } from './network-directory.js';

/** What a pharmacy or laboratory network answers for a patient. */
export interface DataNetworkAnswer {
  /**
   * FHIR R4 resources about the patient, each with a resourceType and an id that is the same every time
   * the same record is answered (so asking again brings nothing new); references to the patient are
   * `Patient/<the patientId asked for>`. Empty when the network holds nothing for the patient.
   */
  resources: FhirResource[];
  /** The organizations the records come from (the pharmacy, the laboratory). */
  organizations: { name: string; identifierValues: string[] }[];
}

/**
 * A network that answers with FHIR data rather than documents: a pharmacy network (dispensed and
 * prescribed medications) or a laboratory network (results). Callers must never call it for an opted-out
 * patient; the core checks that before every call.
 */
export interface DataNetworkPort {
  /** Which source of a network query it serves. */
  readonly kind: 'pharmacy' | 'lab';
  /** Its name, for people (document descriptions, the directory). */
  readonly name: string;
  /** The patient's records at the network. Deterministic per patient; throws only when the network cannot be reached. */
  fetchRecords(query: HiePatientQuery): Promise<DataNetworkAnswer>;
  /** The organizations the network reaches, in a stable order. */
  directory(): Promise<NetworkDirectoryEntry[]>;
}
