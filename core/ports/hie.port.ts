import type { CodeableConcept, Gender, OrganizationIdentifier } from '../domain/types.js';
import type { NetworkDirectoryEntry } from './network-directory.js';

/** The demographics a network matches a patient on. */
export interface HiePatientQuery {
  patientId: string;
  firstName: string;
  lastName: string;
  dob: string;
  genderAtBirth: Gender;
  zips: string[];
}

export interface HieDocumentRef {
  /** Identifier of the document at the network; stable for the same document. */
  networkDocumentId: string;
  fileName: string;
  description: string;
  mimeType: string;
  type: CodeableConcept;
  organizationIdentifiers: OrganizationIdentifier[];
}

/**
 * A health information exchange network. Callers must never call it for an opted-out patient; the core
 * checks that before every call (opted-out patients take no part in exchange).
 */
export interface HieNetworkPort {
  /** The documents the network holds for the patient; an empty list when it holds none. Deterministic per patient. */
  findDocuments(query: HiePatientQuery): Promise<HieDocumentRef[]>;
  /** The bytes of one document; throws a CoreError `DOCUMENT_NOT_FOUND` when the network no longer has it. */
  retrieve(ref: HieDocumentRef): Promise<Uint8Array>;
  /** The organizations the network reaches (those its documents come from), in a stable order. */
  directory(): Promise<NetworkDirectoryEntry[]>;
}
