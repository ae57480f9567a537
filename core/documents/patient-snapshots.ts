import type { FhirResource } from '../ports/ccda.port.js';
import { RecentlyUsed } from '../recently-used.js';

/**
 * What a search reads: the patient's stored resources keyed by `Type/id`, as of `stamp`. Shared between
 * searches, so read-only.
 */
export interface PatientSnapshot {
  stamp: string;
  resources: ReadonlyMap<string, FhirResource>;
}

/** Patients whose snapshot is held: those searched last. */
export const SNAPSHOTS_KEPT = 8;

/**
 * The last snapshots read, a few patients: reading thousands of resources from storage costs far more than
 * searching them (a search over 5,000 resources is meant to answer in about 20 ms at the median), and a
 * snapshot stays valid exactly as long as the stamp of the data does. One per runtime, given to the core in
 * its deps, so the core itself holds no state between calls.
 */
export class PatientSnapshots extends RecentlyUsed<PatientSnapshot> {
  constructor(capacity = SNAPSHOTS_KEPT) {
    super(capacity);
  }
}
