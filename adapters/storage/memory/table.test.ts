import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { FhirResourceRecord } from '../../../core/domain/types.js';
import { MemoryStorage } from './memory.storage.js';
import { Table, TableOverlay } from './table.js';

interface Item {
  id: string;
  tags: string[];
}

const spec = { byTag: (row: Item) => row.tags };

type Op = { kind: 'set'; id: string; tags: string[] } | { kind: 'delete'; id: string } | { kind: 'read'; tag: string };

const ids = fc.constantFrom('a', 'b', 'c', 'd', 'e');
const tag = fc.constantFrom('x', 'y', 'z');
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), id: ids, tags: fc.uniqueArray(tag, { maxLength: 3 }) }),
  fc.record({ kind: fc.constant('delete' as const), id: ids }),
  fc.record({ kind: fc.constant('read' as const), tag }),
);

function keysWithTag(rows: Map<string, Item>, wanted: string): string[] {
  return [...rows.values()].filter((row) => row.tags.includes(wanted)).map((row) => row.id).sort();
}

describe('memory table overlay', () => {
  test('property: index reads inside a transaction see its writes however they interleave, and commit lands them; index keys leave with their last row', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 15 }), fc.array(op, { maxLength: 30 }), (before, during) => {
        const table = new Table<Item>(spec);
        const model = new Map<string, Item>();
        for (const step of before) {
          if (step.kind === 'set') {
            table.set(step.id, { id: step.id, tags: step.tags });
            model.set(step.id, { id: step.id, tags: step.tags });
          } else if (step.kind === 'delete') {
            table.delete(step.id);
            model.delete(step.id);
          }
        }
        const committed = new Map(model);
        const overlay = new TableOverlay(table);
        for (const step of during) {
          if (step.kind === 'set') {
            overlay.set(step.id, { id: step.id, tags: step.tags });
            model.set(step.id, { id: step.id, tags: step.tags });
          } else if (step.kind === 'delete') {
            expect(overlay.delete(step.id)).toBe(model.delete(step.id));
          } else {
            expect([...overlay.keysBy('byTag', step.tag)].sort()).toEqual(keysWithTag(model, step.tag));
            expect(overlay.countBy('byTag', step.tag)).toBe(keysWithTag(model, step.tag).length);
            // Every tag with rows is listed; one listed without rows is one the overlay rewrote away.
            for (const listed of ['x', 'y', 'z']) {
              if (keysWithTag(model, listed).length > 0) expect(overlay.indexKeys('byTag')).toContain(listed);
            }
          }
        }
        // Nothing reaches the table before commit.
        for (const wanted of ['x', 'y', 'z']) expect([...table.keysBy('byTag', wanted)].sort()).toEqual(keysWithTag(committed, wanted));
        overlay.commit();
        for (const wanted of ['x', 'y', 'z']) expect([...table.keysBy('byTag', wanted)].sort()).toEqual(keysWithTag(model, wanted));
        // A table lists exactly the keys with rows: an index entry goes with its last row.
        expect(table.indexKeys('byTag').sort()).toEqual(['x', 'y', 'z'].filter((wanted) => keysWithTag(model, wanted).length > 0));
        for (const id of ['a', 'b', 'c', 'd', 'e']) expect(table.get(id)).toEqual(model.get(id));
      }),
      { numRuns: 300 },
    );
  });
});

describe('memory storage copies', () => {
  test('records go in and come out as copies, a JSON-parsed `__proto__` key kept as a key', async () => {
    const storage = new MemoryStorage();
    const resource = JSON.parse('{"resourceType":"Patient","id":"p1","__proto__":{"polluted":true},"name":[{"given":["Ann"]}],"extension":[]}') as Record<string, unknown>;
    const record: FhirResourceRecord = {
      accountId: 'acc',
      patientId: 'pat',
      resourceType: 'Patient',
      id: 'p1',
      resource,
      sourceDocumentIds: ['d1'],
      updatedAt: '2024-01-01T00:00:00.000Z',
    };
    await storage.fhirResources.putMany([record]);
    (resource.name as { given: string[] }[])[0]!.given.push('Changed');
    const [stored] = await storage.fhirResources.listByPatient('acc', 'pat');
    expect(stored!.resource).toEqual(JSON.parse('{"resourceType":"Patient","id":"p1","__proto__":{"polluted":true},"name":[{"given":["Ann"]}],"extension":[]}'));
    expect(Object.getPrototypeOf(stored!.resource)).toBe(Object.prototype);
    expect(Object.keys(stored!.resource)).toContain('__proto__');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    (stored!.resource as { id: string }).id = 'mutated';
    stored!.sourceDocumentIds.push('d2');
    const [again] = await storage.fhirResources.listByPatient('acc', 'pat');
    expect(again!.resource.id).toBe('p1');
    expect(again!.sourceDocumentIds).toEqual(['d1']);
  });
});
