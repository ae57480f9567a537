import { z } from 'zod';

/**
 * What the API answers on success, as schemas: the OpenAPI document describes each response with them
 * (so generated clients get real types), and the behaviour suite checks every answer it receives against
 * its route's schema, so the document cannot drift from what the service sends. Strict objects: a field
 * added to an answer must be added here too.
 */

const id = z.string().describe('UUID');
const instant = z.string().describe('ISO 8601 instant');
/** The version of a record, for optimistic concurrency (If-Match): its last change. */
const eTag = z.string().describe('Version of the record (its last change), for If-Match');
/** A patient's version: it counts the patient's changes, and is the patient's ETag (quoted there). */
const patientETag = z.string().describe("Version of the patient (its ETag header, unquoted): send it as If-Match to change only this version");

export const addressResponse = z.strictObject({
  addressLine1: z.string(),
  addressLine2: z.string().optional(),
  city: z.string(),
  state: z.string().describe('2-letter USPS code'),
  zip: z.string().describe('5 digits'),
  country: z.string(),
});

export const organizationResponse = z.strictObject({
  id,
  eTag,
  oid: z.string(),
  name: z.string(),
  type: z.string(),
  location: addressResponse,
});

export const facilityResponse = z.strictObject({
  id,
  eTag,
  oid: z.string(),
  name: z.string(),
  npi: z.string(),
  tin: z.string().nullable(),
  active: z.boolean(),
  address: addressResponse,
});

export const facilityListResponse = z.strictObject({ facilities: z.array(facilityResponse) });

export const cohortResponse = z.strictObject({ id, eTag, name: z.string(), description: z.string().nullable() });

export const cohortListResponse = z.strictObject({ cohorts: z.array(cohortResponse) });

export const cohortMembersResponse = z.strictObject({ cohort: cohortResponse, message: z.string() });

const personalIdentifier = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('ssn'), value: z.string() }),
  z.strictObject({ type: z.literal('driversLicense'), value: z.string(), state: z.string() }),
]);

export const patientResponse = z.strictObject({
  id,
  eTag: patientETag,
  facilityIds: z.array(id),
  externalId: z.string().nullable(),
  dateCreated: instant,
  firstName: z.string(),
  lastName: z.string(),
  dob: z.string().describe('YYYY-MM-DD'),
  genderAtBirth: z.enum(['F', 'M', 'O', 'U']),
  personalIdentifiers: z.array(personalIdentifier),
  address: z.array(addressResponse),
  contact: z.array(z.strictObject({ phone: z.string().optional(), email: z.string().optional() })),
  cohortIds: z.array(id),
  hieOptOut: z.boolean(),
});

export const patientPageResponse = z.strictObject({
  patients: z.array(patientResponse),
  meta: z.strictObject({ itemsOnPage: z.number().int(), nextPage: z.string().optional() }),
});

export const patientFacilitiesResponse = z.strictObject({ facilities: z.array(facilityResponse) });

export const hieOptOutResponse = z.strictObject({ id, hieOptOut: z.boolean(), message: z.string().optional() });

const bulkStatus = z.enum(['waiting', 'processing', 'completed', 'failed', 'expired']);

export const bulkStartResponse = z.strictObject({
  requestId: id,
  facilityId: id,
  status: bulkStatus,
  uploadUrl: z.string().describe('Pre-signed URL to PUT the CSV to: single use, valid 10 minutes'),
  params: z.strictObject({ dryRun: z.boolean() }),
  createdAt: instant,
});

export const bulkStatusResponse = z.strictObject({
  requestId: id,
  facilityId: id,
  status: bulkStatus,
  dryRun: z.boolean(),
  reason: z.string().optional().describe('Why the request failed or expired'),
  total: z.number().int().nullable().describe('Data rows in the file, once it has been read'),
  processed: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  created: z.number().int().describe('Rows that created a patient (in a dry run: rows that would)'),
  updated: z.number().int().describe('Rows that updated an existing patient (in a dry run: rows that would)'),
  ignoredColumns: z
    .array(z.string())
    .optional()
    .describe('Once the file is read: its header columns the importer does not know (kept in the result CSV, otherwise ignored; at most 100 listed)'),
  result: z.string().optional().describe('Once completed: a pre-signed URL of the result CSV, valid 600 s'),
  paused: z
    .strictObject({
      code: z.literal('STORAGE_FULL'),
      since: instant,
      reason: z.string().describe('For people, e.g. "paused: the storage is full since <since>; resumes by itself once space is freed"'),
    })
    .optional()
    .describe(
      'While processing: the import waits for a condition outside it to pass and resumes by itself (the status stays `processing`). ' +
        'STORAGE_FULL: the service could not write, its disk or database is full; nothing is lost or written twice meanwhile',
    ),
  documentQueries: z
    .strictObject({ total: z.number().int(), processing: z.number().int(), completed: z.number().int(), failed: z.number().int() })
    .optional()
    .describe('The document queries the import set off, for a completed import that creates patients'),
  createdAt: instant,
});

export const bulkListResponse = z.strictObject({
  requests: z.array(bulkStatusResponse).describe('The account\'s imports, newest first (document query counts only in the status of one import)'),
});

export const settingsResponse = z.strictObject({
  id,
  webhookUrl: z.string().nullable(),
  webhookKey: z
    .string()
    .describe("The secret of the `x-metriport-signature` header, the hex HMAC-SHA256 of the raw body keyed with this text's UTF-8 bytes (what the Metriport SDK's `verifyWebhookSignature` takes)"),
  webhookSigningSecret: z
    .string()
    .describe(
      'The same secret for the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`), ready for a Standard Webhooks or Svix library as it is: `new Webhook(webhookSigningSecret).verify(rawBody, headers)`. `whsec_` + base64 of the HMAC key bytes; changes when `webhookKey` does',
    ),
  webhookEnabled: z.boolean(),
  webhookStatusDetail: z.string().nullable(),
});

const endpointHealth = {
  health: z
    .enum(['healthy', 'failing', 'disabled'])
    .describe('disabled: off (by the account, a 410, or after failing for WEBHOOK_DISABLE_AFTER_DAYS); failing: every attempt since failingSince failed; else healthy'),
  failingSince: instant
    .nullable()
    .describe('The first failed attempt since the last successful delivery (or since the endpoint was last enabled); null when healthy'),
};

export const webhookStatusResponse = z.strictObject({
  webhookEnabled: z.boolean(),
  webhookStatusDetail: z.string().nullable(),
  ...endpointHealth,
  processing: z.number().int().describe('Messages of the default endpoint (webhookUrl) pending: in flight or waiting for a retry'),
  failed: z.number().int().describe('Messages of the default endpoint parked after their last failed attempt'),
  messages: z
    .strictObject({ pending: z.number().int(), delivered: z.number().int(), parked: z.number().int() })
    .describe("The default endpoint's messages by state; the other endpoints count theirs on their own"),
});

export const parkedMessagesResponse = z.strictObject({
  messages: z.array(
    z.strictObject({
      messageId: id,
      type: z.string().nullable(),
      createdAt: instant,
      attempts: z.number().int(),
      lastError: z.string().nullable(),
    }),
  ),
});

export const webhookRetryResponse = z.strictObject({ retried: z.number().int() });

export const webhookEndpointResponse = z.strictObject({
  id,
  url: z.string(),
  description: z.string(),
  enabled: z.boolean().describe('Off: no new messages are stored for it, and those stored wait until it is on again'),
  eventTypes: z.array(z.string()).describe('Exact message types or `prefix.*`; empty: every type'),
  signingSecret: z
    .string()
    .describe('The endpoint\'s own secret, `whsec_` + base64: for a Standard Webhooks or Svix library as it is, and as the key of `x-metriport-signature`'),
  previousSecretExpiresAt: instant
    .nullable()
    .describe('After a rotation: until then, messages are also signed with the previous secret (a second `v1,` value in `webhook-signature`)'),
  statusDetail: z.string().nullable().describe('What last happened to the endpoint, in words (ping, unhealthy, disabled and why)'),
  ...endpointHealth,
  messages: z
    .strictObject({ pending: z.number().int(), failing: z.number().int(), delivered: z.number().int(), parked: z.number().int() })
    .describe('Its messages by state: pending (failing: pending after a failed attempt), delivered (kept for the retention), parked (every attempt failed)'),
  createdAt: instant,
  updatedAt: instant,
});

export const webhookEndpointListResponse = z.strictObject({ endpoints: z.array(webhookEndpointResponse) });

export const webhookReplayResponse = z.strictObject({
  replayed: z.number().int().describe('Messages due again at once, same messageId'),
  more: z.boolean().describe('More messages matched than one replay takes (1,000): replay again from a later `since`'),
});

export const webhookAttemptPageResponse = z.strictObject({
  attempts: z.array(
    z.strictObject({
      id,
      messageId: id.describe('meta.messageId and webhook-id: the same on every endpoint and attempt'),
      endpointId: z.string().describe('The endpoint attempted: its id, or `default` for webhookUrl'),
      type: z.string(),
      patientId: z.string().nullable().describe('The patient the message is about, when it is about one'),
      attemptedAt: instant,
      status: z.enum(['delivered', 'failed']),
      statusCode: z.number().int().nullable().describe("The receiver's HTTP status; null when none came (timeout, unreachable)"),
      latencyMs: z.number().int(),
      error: z.string().nullable().describe('Why the attempt failed, in words'),
      test: z.boolean().describe('A test event (POST /settings/webhook/endpoints/{id}/test), not a stored message'),
    }),
  ),
  nextCursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
});

export const webhookTestEventResponse = z.strictObject({
  messageId: id.describe('meta.messageId and webhook-id of the sample, new for each test event'),
  type: z.string(),
  endpointId: z.string().describe('The endpoint sent to: its id, or `default` for webhookUrl'),
  status: z.enum(['delivered', 'failed']).describe('delivered: the receiver answered 2xx within 4 s'),
  statusCode: z.number().int().nullable().describe("The receiver's HTTP status; null when none came (timeout, unreachable)"),
  latencyMs: z.number().int(),
  error: z.string().nullable().describe('Why it failed, in words'),
});

const stepStatus = z.enum(['processing', 'completed', 'failed']);
const progress = z.strictObject({ status: stepStatus, total: z.number().int(), successful: z.number().int(), errors: z.number().int() });

export const documentQueryResponse = z.strictObject({ requestId: id, download: progress, convert: progress });

/** The latest document query of the patient, or `{}` when there was none. */
export const latestDocumentQueryResponse = z.union([documentQueryResponse, z.strictObject({})]);

export const urlResponse = z.strictObject({ url: z.string().describe('Pre-signed URL') });

export const bulkDownloadUrlsResponse = z.strictObject({ requestId: id, status: z.literal('processing') });

export const documentUploadResponse = z.strictObject({
  documentReferenceId: id,
  uploadUrl: z.string().describe('Pre-signed URL to PUT the file to: single use, valid 10 minutes'),
});

export const uploadUrlResponse = z.string().describe('Pre-signed URL to PUT the file to: single use, valid 10 minutes');

export const documentUploadedResponse = z.strictObject({
  documentReferenceId: id,
  fileName: z.string(),
  size: z.union([z.string(), z.number()]).describe('Bytes'),
});

export const consolidatedQueryResponse = z.strictObject({
  requestId: id,
  status: stepStatus,
  startedAt: instant,
  conversionType: z.enum(['json', 'html', 'pdf']),
  resources: z.array(z.string()).optional(),
  dateFrom: z.string().optional(),
  dateTo: z.string().optional(),
});

export const consolidatedQueriesResponse = z.strictObject({
  status: stepStatus,
  queries: z.array(consolidatedQueryResponse).nullable(),
  message: z.string().optional(),
});

export const searchResponse = z.strictObject({
  url: z.string().optional().describe('Pre-signed URL of the FHIR searchset (valid 60 s); absent when nothing matched'),
  resourceCount: z.number().int(),
});

/** A FHIR R4 Bundle; its entries are FHIR resources. */
export const fhirBundleResponse = z.looseObject({
  resourceType: z.literal('Bundle'),
  type: z.string(),
  entry: z.array(z.looseObject({ resource: z.looseObject({ resourceType: z.string() }) })).optional(),
});

/** A FHIR R4 CodeableConcept. */
const codeableConcept = z.looseObject({
  text: z.string().optional(),
  coding: z.array(z.looseObject({ system: z.string().optional(), code: z.string().optional(), display: z.string().optional() })).optional(),
});

/** A document as the public API's short form (`output=dto`). */
export const documentDtoResponse = z.strictObject({
  id,
  fileName: z.string(),
  description: z.string(),
  status: z.string(),
  indexed: z.string().describe('ISO 8601'),
  mimeType: z.string(),
  size: z.number().int().describe('Bytes'),
  type: codeableConcept,
});

/** A FHIR R4 DocumentReference, as the consolidated store keeps it. */
export const documentReferenceResponse = z.looseObject({
  resourceType: z.literal('DocumentReference'),
  id: z.string(),
  status: z.string(),
  description: z.string().optional(),
  type: codeableConcept.optional(),
  date: z.string().optional(),
  content: z.array(z.looseObject({ attachment: z.looseObject({ contentType: z.string().optional(), url: z.string().optional(), title: z.string().optional() }) })),
});

/** The patient's documents: FHIR DocumentReferences, or the short form with `output=dto`. */
export const documentListResponse = z.strictObject({ documents: z.array(z.union([documentReferenceResponse, documentDtoResponse])) });

/** The answer to resources added to the consolidated store: one entry per resource, in order. */
export const transactionResponseBundle = z.strictObject({
  resourceType: z.literal('Bundle'),
  type: z.literal('transaction-response'),
  entry: z.array(
    z.strictObject({
      response: z.strictObject({
        status: z.enum(['201 Created', '200 OK']).describe('200 OK: the resource merged into the one at `location`'),
        location: z.string().describe('Type/id where the resource is kept'),
      }),
    }),
  ),
});

export const consolidatedCountResponse = z.strictObject({
  total: z.number().int(),
  resources: z.record(z.string(), z.number().int()).describe('Count per resource type'),
  filter: z.strictObject({ resources: z.string(), dateFrom: z.string().optional(), dateTo: z.string().optional() }),
});

const networkSource = z.enum(['hie', 'pharmacy', 'lab']);

export const networkQueryResponse = z.strictObject({
  requestId: id,
  startedAt: instant,
  status: z.enum(['processing', 'completed', 'partial', 'failed']).describe('partial: some sources completed, some failed'),
  sources: z.array(z.strictObject({ type: networkSource, status: z.enum(['processing', 'completed', 'failed']), startedAt: instant, completedAt: instant.optional() })),
  errors: z
    .array(z.strictObject({ source: networkSource, httpStatus: z.number().int(), message: z.string(), timestamp: instant }))
    .optional()
    .describe('Sources that could not start'),
});

export const networkEntriesResponse = z.strictObject({
  networkEntries: z.array(
    z.strictObject({
      name: z.string(),
      oid: z.string(),
      npi: z.string().optional(),
      addressLine: z.string().optional(),
      city: z.string().optional(),
      state: z.string().optional(),
      zipCode: z.string().optional(),
      zip: z.string().optional().describe('Deprecated: zipCode'),
      rootOrganization: z.string().optional(),
      managingOrgOid: z.string().optional(),
      network: z.string().describe('SANDBOX for every entry of the sandbox networks'),
      supportsMessaging: z.boolean(),
      active: z.boolean(),
    }),
  ),
  meta: z.strictObject({ itemsOnPage: z.number().int(), nextPage: z.string().optional() }),
});

export const apiKeyRotationResponse = z.strictObject({
  apiKey: z.string().describe('The new API key, shown this once: the previous key stops working within a few seconds'),
  apiKeyPrefix: z.string().describe('Its first characters, as lists show it'),
});
