/** Wire shapes of the document routes, after the public Metriport API (its SDK parses them). */
import type { ConsolidatedQuery, DocumentQuery } from '../domain/types.js';
import { resourceTypesOf } from './filters.js';

/** The SDK's `documentQuerySchema`: `{ requestId, download, convert }`. */
export function documentQueryToWire(query: DocumentQuery) {
  return { requestId: query.id, download: query.download, convert: query.convert };
}

/** The SDK's `ConsolidatedQuery`: `{ requestId, status, startedAt, conversionType, resources?, dateFrom?, dateTo? }`. */
export function consolidatedQueryToWire(query: ConsolidatedQuery) {
  const resources = resourceTypesOf(query.filters.resources);
  return {
    requestId: query.id,
    status: query.status,
    startedAt: query.createdAt,
    conversionType: query.conversionType,
    ...(resources ? { resources: [...resources] } : {}),
    ...(query.filters.dateFrom ? { dateFrom: query.filters.dateFrom } : {}),
    ...(query.filters.dateTo ? { dateTo: query.filters.dateTo } : {}),
  };
}
