import { expect } from 'vitest';
import { parseWebhookMessage } from '../../core/webhooks/envelope.js';
import type { HostSpecOptions } from '../host.suite.js';
import { withHost } from '../host.suite.js';
import type { AccountApi } from '../support/api.js';
import { consolidatedResources, createPatient, documentsAccount, patientWhere, runDocumentQuery, type Json } from './documents.spec-group.js';

const TEN_MINUTES = 10 * 60_000;

/** Starts a consolidated query, runs the background work, and returns the start response and its message. */
async function runConsolidatedQuery(api: AccountApi, patientId: string, query: Record<string, string> = {}, metadata?: Record<string, string>) {
  const start = await api.call('POST', `/medical/v1/patient/${patientId}/consolidated/query`, { query, body: metadata ? { metadata } : {} });
  expect(start.status, start.text).toBe(200);
  await api.host.settle();
  const messages = (await api.webhooks()).filter((m: Json) => m.meta.type === 'medical.consolidated-data' && m.meta.requestId === start.body.requestId);
  expect(messages).toHaveLength(1);
  parseWebhookMessage(messages[0]);
  return { start: start.body, message: messages[0] as Json, entry: messages[0].patients[0] as Json };
}

async function fetchJson(api: AccountApi, url: string): Promise<Json> {
  const response = await api.host.fetchUrl(url, { method: 'GET' });
  expect(response.status, response.text).toBe(200);
  return JSON.parse(response.text);
}

export function defineConsolidatedGroup({ describe, test, makeHost }: HostSpecOptions): void {
  describe('consolidated data', () => {
    test('a json query sends a collection bundle with the data and a gzip copy, URLs valid 10 minutes; one query at a time', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await patientWhere(api, (files) => files.length >= 2);
        await runDocumentQuery(api, patient.id);

        const path = `/medical/v1/patient/${patient.id}/consolidated/query`;
        const start = await api.call('POST', path, { body: { metadata: { purpose: 'chart-prep' } } });
        expect(start.status, start.text).toBe(200);
        expect(start.body).toEqual({ requestId: expect.any(String), status: 'processing', startedAt: expect.any(String), conversionType: 'json' });
        const second = await api.call('POST', path, { query: { conversionType: 'pdf' } });
        expect(second.body.requestId).toBe(start.body.requestId);
        const running = await api.call('GET', path);
        expect(running.body).toMatchObject({ status: 'processing', queries: [{ requestId: start.body.requestId, status: 'processing' }] });
        await host.settle();
        expect((await api.call('GET', path)).body).toMatchObject({ status: 'completed', queries: null });
        expect((await api.call('GET', `${path}/${start.body.requestId}`)).body).toMatchObject({ requestId: start.body.requestId, status: 'completed' });

        const [message] = (await api.webhooks()).filter((m: Json) => m.meta.type === 'medical.consolidated-data');
        parseWebhookMessage(message);
        expect(message.meta).toMatchObject({ requestId: start.body.requestId, data: { purpose: 'chart-prep' } });
        const entry = message.patients[0];
        expect(entry).toMatchObject({ patientId: patient.id, externalId: patient.externalId, status: 'completed', filters: {} });
        expect(entry.bundle).toMatchObject({ resourceType: 'Bundle', type: 'collection', total: 1 });
        expect(entry.bundle.entry).toHaveLength(1);
        const reference = entry.bundle.entry[0].resource;
        expect(reference).toMatchObject({ resourceType: 'DocumentReference', subject: { reference: `Patient/${patient.id}` } });
        expect(reference.content.map((c: Json) => c.attachment.contentType)).toEqual(['application/json', 'application/gzip']);

        const data = await fetchJson(api, reference.content[0].attachment.url);
        expect(data).toMatchObject({ resourceType: 'Bundle', type: 'collection' });
        const resources = data.entry.map((e: Json) => e.resource);
        expect(resources[0]).toMatchObject({ resourceType: 'Patient', id: patient.id });
        expect(resources).toEqual(await consolidatedResources(api, patient.id));
        const gzipped = await host.fetchUrl(reference.content[1].attachment.url, { method: 'GET' });
        expect(gzipped.status).toBe(200);
        expect(gzipped.headers['content-type']).toBe('application/gzip');
        expect(gzipped.text.charCodeAt(0)).toBe(0x1f);

        host.clock.advance(TEN_MINUTES);
        expect((await host.fetchUrl(reference.content[0].attachment.url, { method: 'GET' })).status).toBe(410);
        // The running query has ended, so a new start is a new query.
        const next = await api.call('POST', path, { query: { conversionType: 'html' } });
        expect(next.body.requestId).not.toBe(start.body.requestId);
      });
    });

    test('html and pdf: the first attachment is the rendering; a real PDF', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await patientWhere(api, (files) => files.length >= 1);
        await runDocumentQuery(api, patient.id);
        for (const [conversionType, contentType, starts] of [
          ['html', 'text/html', '<!doctype html>'],
          ['pdf', 'application/pdf', '%PDF-'],
        ] as const) {
          const { start, entry } = await runConsolidatedQuery(api, patient.id, { conversionType });
          expect(start.conversionType).toBe(conversionType);
          const [content] = entry.bundle.entry[0].resource.content;
          expect(entry.bundle.entry[0].resource.content).toHaveLength(1);
          expect(content.attachment.contentType).toBe(contentType);
          const file = await host.fetchUrl(content.attachment.url, { method: 'GET' });
          expect(file.status).toBe(200);
          expect(file.headers['content-type']).toContain(contentType);
          expect(file.text.startsWith(starts)).toBe(true);
          if (conversionType === 'html') expect(file.text).toMatch(/<h1>Medical record of Eve Everywoman\d+<\/h1>/);
        }
      });
    });

    test('filters: resources and inclusive dates are applied and echoed; bad filters are a 400 naming the parameter', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await patientWhere(api, (files) => files.includes('ccd-1.xml'));
        await runDocumentQuery(api, patient.id);

        const all = await consolidatedResources(api, patient.id);
        const conditions = all.filter((r: Json) => r.resourceType === 'Condition');
        expect(conditions.length).toBeGreaterThan(0);
        const filters = { resources: 'Condition,Immunization', dateFrom: '1990-01-01', dateTo: '2100-12-31' };
        const { entry } = await runConsolidatedQuery(api, patient.id, filters);
        expect(entry.filters).toEqual(filters);
        const data = await fetchJson(api, entry.bundle.entry[0].resource.content[0].attachment.url);
        const types = new Set(data.entry.map((e: Json) => e.resource.resourceType));
        expect([...types].every((type) => type === 'Condition' || type === 'Immunization')).toBe(true);
        expect(types.has('Condition')).toBe(true);
        expect(await consolidatedResources(api, patient.id, { resources: 'Condition' })).toEqual(conditions);

        // Nothing in range: the bundle has no entry.
        const empty = await runConsolidatedQuery(api, patient.id, { resources: 'Condition', dateTo: '1900-01-01' });
        expect(empty.entry).toMatchObject({ status: 'completed', filters: { resources: 'Condition', dateTo: '1900-01-01' } });
        expect(empty.entry.bundle).toMatchObject({ resourceType: 'Bundle', type: 'collection', total: 0, entry: [] });

        for (const [query, field] of [
          [{ dateFrom: '2020-02-30' }, 'dateFrom'],
          [{ dateFrom: '2021-01-02', dateTo: '2021-01-01' }, 'dateFrom'],
          [{ resources: 'Condition,not a type' }, 'resources'],
          [{ conversionType: 'docx' }, 'conversionType'],
        ] as const) {
          const response = await api.call('POST', `/medical/v1/patient/${patient.id}/consolidated/query`, { query });
          expect(response.status, JSON.stringify(query)).toBe(400);
          expect(response.body.detail).toContain(field);
        }
        expect((await api.call('GET', `/medical/v1/patient/${patient.id}/consolidated`, { query: { dateFrom: 'yesterday' } })).status).toBe(400);
      });
    });

    test('a patient with no data gets a completed message with an empty bundle', async () => {
      await withHost(makeHost, async (host) => {
        const api = await documentsAccount(host);
        const patient = await createPatient(api);
        const { entry, message } = await runConsolidatedQuery(api, patient.id, {}, { a: 'b' });
        expect(message.meta.data).toEqual({ a: 'b' });
        expect(entry).toMatchObject({ patientId: patient.id, status: 'completed', filters: {} });
        expect(entry.bundle).toEqual({ resourceType: 'Bundle', type: 'collection', total: 0, entry: [] });
        expect(await consolidatedResources(api, patient.id)).toEqual([]);
        const other = await documentsAccount(host, 'Other Health');
        expect((await other.call('POST', `/medical/v1/patient/${patient.id}/consolidated/query`)).status).toBe(404);
        expect((await other.call('GET', `/medical/v1/patient/${patient.id}/consolidated`)).status).toBe(404);
      });
    });
  });
}
