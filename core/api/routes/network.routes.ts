import { z } from 'zod';
import { consolidatedResources, bundleOf } from '../../documents/consolidated.js';
import { getPatient } from '../../entities/patients.js';
import { getNetworkQuery, listNetworkEntries, networkQueryToWire, startNetworkQuery } from '../../network/query.js';
import { defineRoute, json } from '../router.js';
import { queryBoolean } from '../schemas.js';

const ENTRIES_PAGE_MAX = 500;

export const networkRoutes = [
  defineRoute('startNetworkQuery', {
    query: z.object({ patientId: z.string().trim().min(1) }),
    body: z.object({
      sources: z.unknown().describe('A list of sources (["hie", "pharmacy", "lab"]) or an object ({ hie: { enabled: true } })'),
      metadata: z.unknown().optional().describe('String key-value pairs echoed as meta.data of the webhooks'),
    }),
    async handle({ deps, account, query, body }) {
      return json(200, networkQueryToWire(await startNetworkQuery(deps, account, { patientId: query.patientId, sources: body.sources, metadata: body.metadata })));
    },
  }),
  defineRoute('getNetworkQuery', {
    async handle({ deps, account, params }) {
      return json(200, networkQueryToWire(await getNetworkQuery(deps, account.id, params.requestId)));
    },
  }),
  defineRoute('downloadNetworkQueryConsolidated', {
    async handle({ deps, account, params }) {
      const query = await getNetworkQuery(deps, account.id, params.requestId);
      const patient = await getPatient(deps, account.id, query.patientId);
      return json(200, bundleOf(await consolidatedResources(deps, patient, {}), 'collection'), { 'content-type': 'application/fhir+json' });
    },
  }),
  defineRoute('listNetworkEntries', {
    query: z.object({
      filter: z.string().max(200).optional().describe('Words that must all appear (name, city, state, zip, NPI, OID)'),
      npi: z.string().trim().max(20).optional(),
      oid: z.string().trim().max(200).optional(),
      destination: z.string().trim().max(200).optional().describe('Alias of oid'),
      supportsMessaging: queryBoolean.optional(),
      active: queryBoolean.optional(),
      fromItem: z.string().trim().max(200).optional().describe('Start at this OID, inclusive'),
      count: z.coerce.number().int().min(1).max(ENTRIES_PAGE_MAX).optional().default(100),
    }),
    async handle({ deps, query, request }) {
      const page = await listNetworkEntries(deps, {
        ...(query.filter ? { filter: query.filter } : {}),
        ...(query.npi ? { npi: query.npi } : {}),
        ...((query.oid ?? query.destination) ? { oid: (query.oid ?? query.destination)! } : {}),
        supportsMessaging: query.supportsMessaging,
        active: query.active,
        ...(query.fromItem ? { fromItem: query.fromItem } : {}),
        count: query.count,
      });
      const meta: { itemsOnPage: number; nextPage?: string } = { itemsOnPage: page.networkEntries.length };
      if (page.next !== undefined) {
        const next = new URLSearchParams();
        for (const [name, value] of Object.entries(request.query)) if (name !== 'fromItem' && typeof value === 'string') next.set(name, value);
        next.set('fromItem', page.next);
        next.set('count', String(query.count));
        meta.nextPage = `${deps.config.publicUrl}${request.path}?${next.toString()}`;
      }
      return json(200, { networkEntries: page.networkEntries, meta });
    },
  }),
];
