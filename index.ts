/**
 * `carebridge`: the core (use cases, wire schemas, webhook messages, ports and domain types, error codes),
 * the framework-agnostic API handler, and `createCarebridge`, which wires the core from options for use
 * inside an existing Node backend. `carebridge/koa` mounts the API in a Koa app, `carebridge/memory` is the
 * sandbox host, `carebridge/client` the Node client.
 */

// Embedding
export { createCarebridge, type Carebridge, type CarebridgeOptions } from './hosts/embedded/carebridge.js';
export type { PortName, Ports } from './adapters/container/tokens.js';
export { createNodeListener, type NodeListener, type NodeListenerOptions } from './http/node.js';
export { createFetchHandler, inProcessFetch, type FetchHandlerOptions } from './http/fetch.js';

// The framework-agnostic handler
export { createApiHandler, type ApiHandler, type ApiHandlerOptions } from './core/api/handler.js';
export { DEFAULT_FAILED_AUTH_PER_MINUTE, DEFAULT_RATE_LIMITS, type RateClass, type RateLimits } from './core/api/rate-limit.js';
export type { ApiRequest, ApiResponse, Problem } from './core/api/types.js';
export type { RouteDefinition } from './core/api/router.js';
export { buildOpenApiDocument } from './core/api/openapi.js';
export * from './core/api/schemas.js';

// Errors: codes are API
export { CoreError, ERROR_CODES, isCoreError, statusForCode, type ErrorCode } from './core/errors.js';

// Domain, ports, dependencies
export type * from './core/domain/types.js';
export type * from './core/ports/index.js';
export type { CoreConfig, CoreDeps } from './core/deps.js';

// Use cases
export { authenticate, createAccount, type CreatedAccount } from './core/accounts.js';
export { createOrganization, getOrganization, organizationToWire, updateOrganization } from './core/entities/organization.js';
export { createFacility, facilityToWire, getFacility, removeFacility, updateFacility } from './core/entities/facilities.js';
export { cohortToWire, createCohort, getCohort, removeCohort, updateCohort } from './core/entities/cohorts.js';
export { createPatient, getHieOptOut, getPatient, listPatients, patientToWire, removePatient, setHieOptOut, updatePatient } from './core/entities/patients.js';
export { getBulkRequest, startBulkCreate, type StartBulkInput, type StartedBulk } from './core/bulk/start.js';
export { acceptUpload } from './core/bulk/upload.js';
export { getDocumentQueryStatus, startDocumentQuery } from './core/documents/query.js';
export { getConsolidatedQuery, getPatientConsolidated, listConsolidatedQueries, startConsolidatedQuery } from './core/documents/consolidated.js';
export { searchPatientData } from './core/documents/search.js';
export { getSettings, getWebhookStatus, retryWebhookMessages, updateSettings } from './core/settings.js';
export { coreJobHandlers, resumeInterruptedWork } from './core/jobs.js';
export { deliverDueMessages } from './core/webhooks/dispatcher.js';

// Webhook messages and their signatures
export * from './core/webhooks/envelope.js';
export { signWebhookBody, verifyStandardWebhook, verifyWebhookSignature, webhookSigningSecret } from './contract/signature.js';
