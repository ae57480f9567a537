import { describe, expect, test } from 'vitest';
import { SteppedClock } from '../../adapters/clock/stepped.clock.js';
import { SequentialIds } from '../../adapters/ids/sequential.ids.js';
import { MemoryHost } from '../../hosts/memory/memory.host.js';
import { createApiHandler } from '../api/handler.js';
import type { ApiResponse } from '../api/types.js';
import { isCoreError } from '../errors.js';
import type { FhirBundle } from '../ports/ccda.port.js';
import type { RendererPort } from '../ports/renderer.port.js';
import type { DocumentRecord } from '../domain/types.js';
import { renderDocument } from './downloads.js';
import { RenderSlots } from './render-slots.js';

/** A promise with its resolve, to hold work until the test lets it go. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

/** Work that says when it starts and ends only when released. */
function heldWork(log: string[], name: string) {
  const started = deferred();
  const release = deferred();
  return {
    started: started.promise,
    release: () => release.resolve(),
    work: async () => {
      log.push(name);
      started.resolve();
      await release.promise;
      return name;
    },
  };
}

const codeOf = (error: unknown) => (isCoreError(error) ? error.code : String(error));

describe('render slots', () => {
  test('N run, `queue` wait in order, the next request is refused BUSY; a job waits past the line; an ending render hands its slot on', async () => {
    const slots = new RenderSlots(2, 1);
    const log: string[] = [];
    const [a, b, c, job] = ['a', 'b', 'c', 'job'].map((name) => heldWork(log, name));
    const ran = [slots.run(a!.work), slots.run(b!.work), slots.run(c!.work)];
    await Promise.all([a!.started, b!.started]);
    expect(log).toEqual(['a', 'b']);
    expect(slots.load).toEqual({ running: 2, waiting: 1 });

    const refused = await slots.run(async () => 'd').catch((error: unknown) => error);
    expect(codeOf(refused)).toBe('BUSY');
    expect((refused as { details?: unknown }).details).toEqual({ retryAfterSeconds: 1 });
    const queuedJob = slots.run(job!.work, 'job');
    expect(slots.load).toEqual({ running: 2, waiting: 2 });

    a!.release();
    await c!.started;
    expect(log).toEqual(['a', 'b', 'c']);
    // A newcomer does not take the slot of the job waiting before it.
    const late = heldWork(log, 'late');
    const lateRun = slots.run(late.work, 'job');
    b!.release();
    await job!.started;
    expect(log).toEqual(['a', 'b', 'c', 'job']);
    c!.release();
    job!.release();
    await late.started;
    late.release();
    expect(await Promise.all([...ran, queuedJob, lateRun])).toEqual(['a', 'b', 'c', 'job', 'late']);
    expect(slots.load).toEqual({ running: 0, waiting: 0 });
  });

  test("a C-CDA document's rendering (its conversion included) takes a slot too", async () => {
    const slots = new RenderSlots(1, 0);
    const held = heldWork([], 'held');
    const running = slots.run(held.work);
    await held.started;
    const deps = { renders: slots } as unknown as Parameters<typeof renderDocument>[0];
    const refused = await renderDocument(deps, {} as DocumentRecord, 'pdf').catch((error: unknown) => error);
    expect(codeOf(refused)).toBe('BUSY');
    held.release();
    await running;
  });

  test('a render that fails gives its slot back', async () => {
    const slots = new RenderSlots(1, 0);
    await expect(slots.run(() => Promise.reject(new Error('renderer broke')))).rejects.toThrow('renderer broke');
    expect(await slots.run(async () => 'next')).toBe('next');
  });
});

describe('render slots through the API', () => {
  test('the cap holds across accounts: 2 render, 1 waits, the next answers 503 BUSY with Retry-After; releasing lets the waiter go', async () => {
    const host = await MemoryHost.create({ clock: new SteppedClock('2026-01-01T00:00:00.000Z'), ids: new SequentialIds() });
    try {
      const held: { started: string; release: () => void }[] = [];
      const waiting: (() => void)[] = [];
      const renderer: RendererPort = {
        render: async (bundle: FhirBundle) => {
          const release = deferred();
          const family = (bundle.entry ?? []).map((entry) => entry.resource).find((resource) => resource?.resourceType === 'Patient') as { name?: { family?: string }[] } | undefined;
          held.push({ started: family?.name?.[0]?.family ?? '?', release: () => release.resolve() });
          for (const notify of waiting.splice(0)) notify();
          await release.promise;
          return new TextEncoder().encode('<html></html>');
        },
      };
      const rendersStarted = async (count: number) => {
        while (held.length < count) await new Promise<void>((resolve) => waiting.push(resolve));
      };
      const handler = createApiHandler({ ...host.deps, renderer, renders: new RenderSlots(2, 1) });

      const accounts = await Promise.all(
        ['Alpha', 'Beta'].map(async (name) => {
          const { apiKey } = await host.createAccount(name);
          const call = (method: string, path: string, body?: unknown, query: Record<string, string> = {}) =>
            handler({ method, path, query, headers: { 'x-api-key': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body } : {}) });
          const facility = await call('POST', '/medical/v1/facility', { name: 'Clinic', npi: '1234567893', address: { addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' } });
          expect(facility.status).toBe(201);
          const patient = await call(
            'POST',
            '/medical/v1/patient',
            { firstName: 'Pat', lastName: name, dob: '1980-01-01', genderAtBirth: 'F', address: [{ addressLine1: '1 Main St', city: 'Springfield', state: 'IL', zip: '62701' }] },
            { facilityId: (facility.body as { id: string }).id },
          );
          expect(patient.status).toBe(201);
          const id = (patient.body as { id: string }).id;
          const added = await call('PUT', `/medical/v1/patient/${id}/consolidated`, {
            resourceType: 'Bundle',
            type: 'collection',
            entry: [{ resource: { resourceType: 'Condition', code: { text: 'Asthma' }, subject: { reference: `Patient/${id}` } } }],
          });
          expect(added.status).toBe(200);
          return { name, render: () => call('GET', `/medical/v1/patient/${id}/medical-record`, undefined, { conversionType: 'html' }) };
        }),
      );
      const [alpha, beta] = accounts as [(typeof accounts)[number], (typeof accounts)[number]];

      const first: Promise<ApiResponse>[] = [alpha.render(), beta.render()];
      await rendersStarted(2);
      const third = alpha.render();
      const refused = await beta.render();
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect((refused.body as { code: string }).code).toBe('BUSY');
      expect(held.map((render) => render.started)).toEqual(['Alpha', 'Beta']);

      held[1]!.release();
      await rendersStarted(3);
      expect(held[2]!.started).toBe('Alpha');
      held[0]!.release();
      held[2]!.release();
      for (const response of await Promise.all([...first, third])) expect(response.status).toBe(200);
      // The line is empty again: Beta's render goes through.
      const again = beta.render();
      await rendersStarted(4);
      held[3]!.release();
      expect((await again).status).toBe(200);
    } finally {
      await host.close();
    }
  });
});
