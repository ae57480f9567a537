import { afterEach, describe, expect, test, vi } from 'vitest';
import { SequentialIds } from './sequential.ids.js';
import { Uuid7Ids } from './uuid7.ids.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('Uuid7Ids', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  test('gives lower-case UUID v7 text, unique and increasing even within one millisecond', () => {
    vi.useFakeTimers({ now: new Date('2026-05-01T00:00:00Z'), toFake: ['Date'] });
    const ids = new Uuid7Ids();
    const generated = Array.from({ length: 5000 }, () => ids.next());
    for (const id of generated) expect(id).toMatch(UUID);
    expect(new Set(generated).size).toBe(generated.length);
    expect([...generated].sort()).toEqual(generated);
  });

  test('stays increasing when the wall clock steps back', () => {
    vi.useFakeTimers({ now: new Date('2026-05-01T00:00:10Z'), toFake: ['Date'] });
    const ids = new Uuid7Ids();
    const before = ids.next();
    vi.setSystemTime(new Date('2026-05-01T00:00:00Z'));
    const after = ids.next();
    expect(after > before).toBe(true);
  });

  test('encodes the creation time in its first 48 bits', () => {
    vi.useFakeTimers({ now: new Date('2030-01-01T00:00:00Z'), toFake: ['Date'] });
    const id = new Uuid7Ids().next();
    const ms = Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(Date.parse('2030-01-01T00:00:00Z'));
    expect(ms).toBeLessThan(Date.parse('2030-01-01T00:00:01Z'));
  });
});

describe('SequentialIds', () => {
  test('counts from 1 in UUID v7 shape', () => {
    const ids = new SequentialIds();
    expect(ids.next()).toBe('00000000-0000-7000-8000-000000000001');
    expect(ids.next()).toBe('00000000-0000-7000-8000-000000000002');
    for (let i = 0; i < 20; i++) ids.next();
    expect(ids.next()).toBe('00000000-0000-7000-8000-000000000017');
  });

  test('ids are increasing as strings, across the hex digit boundaries', () => {
    const ids = new SequentialIds({ start: 0xfff0 });
    const generated = Array.from({ length: 40 }, () => ids.next());
    for (const id of generated) expect(id).toMatch(UUID);
    expect([...generated].sort()).toEqual(generated);
  });

  test('two generators with different seeds never collide, and each is deterministic', () => {
    const a = new SequentialIds({ seed: 1 });
    const b = new SequentialIds({ seed: 2 });
    const fromA = Array.from({ length: 100 }, () => a.next());
    const fromB = Array.from({ length: 100 }, () => b.next());
    expect(fromA[0]).toBe('00000001-0000-7000-8000-000000000001');
    expect(fromB[0]).toBe('00000002-0000-7000-8000-000000000001');
    expect(fromA.filter((id) => fromB.includes(id))).toEqual([]);
    const again = new SequentialIds({ seed: 1 });
    expect(Array.from({ length: 100 }, () => again.next())).toEqual(fromA);
  });

  test('refuses seeds and starts outside their range', () => {
    expect(() => new SequentialIds({ seed: -1 })).toThrow(RangeError);
    expect(() => new SequentialIds({ seed: 2 ** 32 })).toThrow(RangeError);
    expect(() => new SequentialIds({ seed: 1.5 })).toThrow(RangeError);
    expect(() => new SequentialIds({ start: -1 })).toThrow(RangeError);
  });
});
