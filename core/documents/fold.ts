import type { FhirResourceJson, FhirResourceRecord } from '../domain/types.js';
import type { FhirBundle, FhirResource, FoldDocument, FoldOutcome, FoldRequest } from '../ports/ccda.port.js';
import { needsTextRepair, repairText } from '../text.js';
import { ConsolidatedRecord } from './consolidate.js';

/** The bundle's resources, text repaired; the converter's objects themselves where nothing needs it (they are ours alone). */
const resourcesOf = (bundle: FhirBundle): FhirResource[] =>
  (bundle.entry ?? []).flatMap((entry) => (entry.resource ? [needsTextRepair(entry.resource) ? repairText(entry.resource) : entry.resource] : []));

const bundleOf = (document: FoldDocument): FhirBundle => ('bundle' in document ? document.bundle : (JSON.parse(document.bundleJson) as FhirBundle));

const keyOf = (record: { resourceType: string; id: string }) => `${record.resourceType}/${record.id}`;

/**
 * Folds converted documents of one patient, one after the other in the given order, into the patient's
 * stored record (ConsolidatedRecord: each document in time proportional to it and what it can merge with)
 * and returns the net change against what was stored: a record the folds kept as it was is not written.
 * Pure, and made of JSON text both ways, so it runs as well on a converter's thread (the converter port's
 * `fold`) as here: only text crosses, one copy each way.
 */
export function foldDocuments(request: FoldRequest): FoldOutcome {
  const { accountId, patientId, now } = request;
  const stored: FhirResourceRecord[] = request.stored.map(({ resourceJson, ...record }) => ({ ...record, resource: JSON.parse(resourceJson) as Record<string, unknown> }));
  const record = new ConsolidatedRecord(accountId, patientId, stored);
  const touched = new Set<string>();
  for (const document of request.documents) {
    const fold = record.fold({ documentId: document.documentId, resources: resourcesOf(bundleOf(document)) }, now);
    for (const key of [...fold.changed, ...fold.removed]) touched.add(keyOf(key));
  }

  // The net change against what was stored: a record the folds kept as it was is the stored object itself.
  const storedByKey = new Map(stored.map((before) => [keyOf(before), before]));
  const changed: FhirResourceJson[] = [];
  const removed: FoldOutcome['removed'] = [];
  for (const key of [...touched].sort()) {
    const after = record.get(key);
    const before = storedByKey.get(key);
    if (after && after !== before) {
      const { resource, ...rest } = after;
      changed.push({ ...rest, resourceJson: JSON.stringify(resource) });
    } else if (!after && before) removed.push({ resourceType: before.resourceType, id: before.id });
  }
  return { changed, removed };
}
