import { describe, expect, test } from 'vitest';
import { applyIndexChange } from '../../core/documents/patient-index.js';
import type { SearchDocument } from '../../core/ports/search-index.port.js';
import { STAMPS_KEPT, withStamps, type SearchIndexWithoutStamps } from './stamped.search-index.js';

/** An index without stamps of its own, counting what it is given. */
class StamplessIndex implements SearchIndexWithoutStamps {
  upserts: string[] = [];
  async upsert(_accountId: string, patientId: string, documents: readonly SearchDocument[]): Promise<void> {
    if (documents.length > 0) this.upserts.push(patientId);
  }
  async remove(): Promise<void> {}
  async search(): Promise<string[]> {
    return [];
  }
}

const document: SearchDocument = { key: 'DocumentReference/1', text: 'letter' };
const change = (before: string, after: string) => ({ before, after, upsert: () => [document], resources: () => [], remove: [] });

describe('stamps kept beside an index without its own', () => {
  test('are kept for the last STAMPS_KEPT patients only; a forgotten one makes the change wait for a rebuild', async () => {
    const search = new StamplessIndex();
    const deps = { search: withStamps(search) };
    // Each patient searched once: its index built and stamped.
    for (let n = 0; n <= STAMPS_KEPT; n++) {
      await deps.search.upsert('account', `patient-${n}`, [document]);
      await deps.search.setStamp('account', `patient-${n}`, 'one');
    }
    expect(search.upserts).toHaveLength(STAMPS_KEPT + 1);

    // The first patient's stamp was forgotten: its index is no longer known to be current, so a change
    // from 'one' is not applied (the next search rebuilds it). The last patient's is still known.
    search.upserts = [];
    await applyIndexChange(deps, 'account', 'patient-0', change('one', 'two'));
    await applyIndexChange(deps, 'account', `patient-${STAMPS_KEPT}`, change('one', 'two'));
    expect(search.upserts).toEqual([`patient-${STAMPS_KEPT}`]);
  });
});
