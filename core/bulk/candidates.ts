import type { Patient } from '../domain/types.js';
import type { ParsedRow } from '../csv/types.js';
import { demographicsOfPatient, prepareDemographics, prepareRowDemographics, type PreparedDemographics } from '../matching/decide.js';

/**
 * A patient a row may match: its id, its blocking keys and what matching compares (folded when first
 * compared). A stored patient's or, in a real run, one a row creates or changes; in a dry run, which keeps
 * no patients, what a row would make of one.
 */
export interface Candidate {
  id: string;
  matchKeys: readonly string[];
  patient: Patient | undefined;
  /** The row whose demographics the candidate has, with its folded last names, when it has no patient. */
  row: ParsedRow | undefined;
  lastNames: string[] | undefined;
  folded: PreparedDemographics | undefined;
}

export function patientCandidate(patient: Patient, folded?: PreparedDemographics): Candidate {
  return { id: patient.id, matchKeys: patient.matchKeys, patient, row: undefined, lastNames: undefined, folded };
}

/** A patient whose demographics and keys are those of `row` (the folded ones when already worked out). */
export function rowCandidate(id: string, row: ParsedRow, lastNames: string[], keys: string[], folded?: PreparedDemographics): Candidate {
  return { id, matchKeys: keys, patient: undefined, row, lastNames, folded };
}

function foldedOf(candidate: Candidate): PreparedDemographics {
  if (candidate.folded === undefined) {
    const { row, patient } = candidate;
    candidate.folded = row ? prepareRowDemographics(row, candidate.lastNames) : prepareDemographics(demographicsOfPatient(patient!));
  }
  return candidate.folded;
}

const NO_CANDIDATES: readonly { id: string; demographics: PreparedDemographics }[] = [];

/**
 * The patients a batch may match, by blocking key. Rows apply in file order, so a patient created or
 * changed by an earlier row is what a later row sees.
 */
export class CandidateIndex {
  /** Blocking key -> ids of the patients holding it (a few at most: plain arrays, not a Map per key). */
  private readonly byKey = new Map<string, string[]>();
  private readonly byId = new Map<string, Candidate>();

  get(id: string): Candidate | undefined {
    return this.byId.get(id);
  }

  /** The candidates sharing a key with `keys`, each once, with what matching compares. */
  around(keys: readonly string[]): readonly { id: string; demographics: PreparedDemographics }[] {
    let ids: string[] | undefined;
    for (const key of keys) {
      const bucket = this.byKey.get(key);
      if (bucket === undefined) continue;
      for (const id of bucket) {
        if (ids === undefined) ids = [id];
        else if (!ids.includes(id)) ids.push(id);
      }
    }
    // Most rows share no key with anyone: nothing to allocate.
    return ids === undefined ? NO_CANDIDATES : ids.map((id) => ({ id, demographics: foldedOf(this.byId.get(id)!) }));
  }

  /** Adds the candidate, or replaces the version of it already held. */
  put(candidate: Candidate): void {
    const held = this.byId.get(candidate.id);
    if (held) {
      for (const key of held.matchKeys) {
        const bucket = this.byKey.get(key);
        const at = bucket ? bucket.indexOf(held.id) : -1;
        if (at >= 0) bucket!.splice(at, 1);
      }
    }
    this.byId.set(candidate.id, candidate);
    for (const key of candidate.matchKeys) {
      const bucket = this.byKey.get(key);
      if (!bucket) this.byKey.set(key, [candidate.id]);
      else if (!bucket.includes(candidate.id)) bucket.push(candidate.id);
    }
  }
}
