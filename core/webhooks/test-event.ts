import type { CoreDeps } from '../deps.js';
import type { WebhookAttempt } from '../domain/types.js';
import type { WebhookDeliveryResult } from '../ports/webhook-sender.port.js';
import { consolidatedFilePath } from '../documents/consolidated.js';
import { documentFilePath } from '../documents/downloads.js';
import { patientReference } from '../documents/patient-resource.js';
import { resultPath } from '../bulk/result.js';
import { networkDataPath } from '../network/sources.js';
import { CoreError } from '../errors.js';
import { issueSignedUrl } from '../signed-urls.js';
import { MINUTE_MS } from '../time.js';
import { DEFAULT_DELIVERY_TIMEOUT_MS } from './delivery.js';
import { FILTERABLE_EVENT_TYPES, getEndpoint } from './endpoints.js';
import {
  bulkPatientCreateMessage,
  consolidatedDataMessage,
  documentBulkDownloadUrlsMessage,
  documentConversionMessage,
  documentDownloadMessage,
  endpointDisabledMessage,
  networkQueryMessage,
  type MessageMetaInput,
  type PingMessage,
  type WebhookDocument,
  type WebhookMessage,
} from './envelope.js';
import { DEFAULT_DISABLE_AFTER_MS } from './health.js';
import { DEFAULT_ENDPOINT_ID } from './log.js';
import { describeFailure } from './ping.js';

/*
 * A test event: a realistic sample message of any type an endpoint can receive, sent at once to that one
 * endpoint (`POST /settings/webhook/endpoints/{id|default}/test`), signed as every message is (with both
 * secrets during a rotation's grace period), marked `meta.test: true`, and recorded in the delivery log
 * (`test: true`). Like the ping, it goes beside the outbox: it is sent once, never retried, sent even to an
 * endpoint that is off (to check it before turning it on again), and moves no failure clock. Its ids are
 * new, and its URLs are signed for the account but name nothing stored (404).
 */

export type TestEventType = (typeof FILTERABLE_EVENT_TYPES)[number];

/** Fixed sample ids: the same in every test event, so a receiver can recognise them too. */
const SAMPLE = {
  patientId: '0192f1c2-7a1b-7c3d-8e4f-5a6b7c8d9e01',
  externalId: 'emr-1042',
  requestId: '0192f1c2-7a1b-7c3d-8e4f-5a6b7c8d9e02',
  documentId: '0192f1c2-7a1b-7c3d-8e4f-5a6b7c8d9e03',
  endpointId: '0192f1c2-7a1b-7c3d-8e4f-5a6b7c8d9e04',
};

type SampleDeps = Pick<CoreDeps, 'urlSigner' | 'clock' | 'config'>;

/**
 * A sample message of `type` for `accountId`, valid against its schema (the builders check it), with
 * `meta.test: true` and the given message id and time.
 */
export function sampleMessage(deps: SampleDeps, accountId: string, type: TestEventType, meta: { messageId: string; when: Date }): Exclude<WebhookMessage, PingMessage> {
  const when = meta.when.toISOString();
  const url = (path: string) => issueSignedUrl(deps, { method: 'GET', path, accountId }, 10 * MINUTE_MS).url;
  const base: MessageMetaInput = { messageId: meta.messageId, requestId: SAMPLE.requestId, when: meta.when, data: { source: 'test-event' }, test: true };
  const patient = { patientId: SAMPLE.patientId, externalId: SAMPLE.externalId };
  const document: WebhookDocument = {
    id: SAMPLE.documentId,
    fileName: 'continuity-of-care.xml',
    description: 'Continuity of Care Document',
    status: 'current',
    indexed: when,
    mimeType: 'application/xml',
    size: '48213',
    type: { coding: [{ system: 'http://loinc.org', code: '34133-9', display: 'Summary of episode note' }], text: 'Summary of episode note' },
  };
  switch (type) {
    case 'medical.document-download':
      return documentDownloadMessage(base, [{ ...patient, type: 'document-download', status: 'completed', documents: [document] }]);
    case 'medical.document-conversion':
      return documentConversionMessage(base, [{ ...patient, type: 'document-conversion', status: 'completed' }]);
    case 'medical.document-bulk-download-urls':
      return documentBulkDownloadUrlsMessage(base, [
        {
          ...patient,
          status: 'completed',
          documents: [
            {
              ...document,
              size: 48213,
              url: url(documentFilePath(SAMPLE.documentId)),
              organizationIdentifiers: [{ name: 'Sandbox HIE Network', identifierValues: ['2.16.840.1.113883.3.9621'] }],
            },
          ],
        },
      ]);
    case 'medical.consolidated-data': {
      const query = { patientId: SAMPLE.patientId, id: SAMPLE.requestId };
      return consolidatedDataMessage(base, [
        {
          ...patient,
          status: 'completed',
          filters: { resources: 'Condition,MedicationStatement', dateFrom: '2024-01-01' },
          bundle: {
            resourceType: 'Bundle',
            type: 'collection',
            total: 1,
            entry: [
              {
                resource: {
                  resourceType: 'DocumentReference',
                  id: SAMPLE.requestId,
                  status: 'current',
                  type: { text: 'Consolidated data' },
                  date: when,
                  subject: { reference: patientReference(SAMPLE.patientId) },
                  content: [
                    { attachment: { contentType: 'application/json', url: url(consolidatedFilePath(query, 'data.json')), title: 'data.json' } },
                    { attachment: { contentType: 'application/gzip', url: url(consolidatedFilePath(query, 'data.json.gz')), title: 'data.json.gz' } },
                  ],
                },
              },
            ],
          },
        },
      ]);
    }
    case 'medical.bulk-patient-create':
      return bulkPatientCreateMessage(base, { requestId: SAMPLE.requestId, status: 'completed', result: url(resultPath(SAMPLE.requestId)), created: 42, updated: 3 });
    case 'network-query.hie':
    case 'network-query.pharmacy':
    case 'network-query.lab': {
      const source = type.slice('network-query.'.length) as 'hie' | 'pharmacy' | 'lab';
      return networkQueryMessage(base, type, {
        ...patient,
        consolidatedDataUrl: url(networkDataPath({ id: SAMPLE.requestId })),
        source: { type: source, ...(source === 'hie' ? { source: 'Sandbox HIE Network' } : {}), status: 'completed', completedAt: when },
      });
    }
    case 'webhook.endpoint-disabled': {
      const failingSince = new Date(meta.when.getTime() - DEFAULT_DISABLE_AFTER_MS).toISOString();
      const { requestId: _none, data: _noData, ...noticeMeta } = base;
      return endpointDisabledMessage(noticeMeta, {
        endpointId: SAMPLE.endpointId,
        url: 'https://hooks.example.com/carebridge/conversions',
        description: 'EHR bridge',
        reason: 'failing',
        failingSince,
        disabledAt: when,
        statusDetail: `Disabled: no attempt succeeded for 5 days (failing since ${failingSince}; the last: the receiver answered HTTP 503); PATCH the endpoint with enabled: true to re-enable`,
      });
    }
  }
}

export interface TestEventResult {
  messageId: string;
  type: TestEventType;
  /** The endpoint sent to: its id, or `default`. */
  endpointId: string;
  status: WebhookAttempt['outcome'];
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

/**
 * Sends a sample message of `type` to one endpoint (`endpointIdOrDefault`: an extra endpoint's id, or
 * `default` for `webhookUrl`) now, waits for its answer (4 s at most), records the attempt in the delivery
 * log, and returns what happened.
 * @throws CoreError `WEBHOOK_ENDPOINT_NOT_FOUND`, `WEBHOOK_URL_NOT_SET` (`default` without a webhook URL).
 */
export async function sendTestEvent(
  deps: Pick<CoreDeps, 'storage' | 'webhookSender' | 'clock' | 'ids' | 'urlSigner' | 'config'>,
  accountId: string,
  endpointIdOrDefault: string,
  type: TestEventType,
): Promise<TestEventResult> {
  let target: { url: string; signingKey: string; previousSigningKeys: string[]; endpointId?: string };
  const now = deps.clock.now();
  if (endpointIdOrDefault === DEFAULT_ENDPOINT_ID) {
    const settings = await deps.storage.webhookSettings.get(accountId);
    if (!settings?.webhookUrl) throw new CoreError('WEBHOOK_URL_NOT_SET', 'The account has no webhook URL; set it with POST /settings first');
    target = { url: settings.webhookUrl, signingKey: settings.webhookKey, previousSigningKeys: [] };
  } else {
    const endpoint = await getEndpoint(deps, accountId, endpointIdOrDefault);
    const inGrace = endpoint.previousSecret !== undefined && endpoint.previousSecretUntil !== undefined && endpoint.previousSecretUntil > now.toISOString();
    target = { url: endpoint.url, signingKey: endpoint.secret, previousSigningKeys: inGrace ? [endpoint.previousSecret!] : [], endpointId: endpoint.id };
  }

  const message = sampleMessage(deps, accountId, type, { messageId: deps.ids.next(), when: now });
  const timeoutMs = DEFAULT_DELIVERY_TIMEOUT_MS;
  const result: WebhookDeliveryResult = await deps.webhookSender
    .send({
      url: target.url,
      messageId: message.meta.messageId,
      body: JSON.stringify(message),
      signingKey: target.signingKey,
      ...(target.previousSigningKeys.length > 0 ? { previousSigningKeys: target.previousSigningKeys } : {}),
      timestamp: Math.floor(now.getTime() / 1000),
      timeoutMs,
    })
    .catch((error: unknown) => ({ outcome: 'failed' as const, gone: false, error: String(error), durationMs: 0 }));
  const error = result.outcome === 'failed' ? describeFailure(result, timeoutMs) : undefined;
  const attempt: WebhookAttempt = {
    id: deps.ids.next(),
    accountId,
    deliveryId: message.meta.messageId,
    messageId: message.meta.messageId,
    type,
    attemptedAt: now.toISOString(),
    outcome: result.outcome,
    latencyMs: Math.max(0, Math.round(result.durationMs)),
    test: true,
  };
  if (target.endpointId !== undefined) attempt.endpointId = target.endpointId;
  if (result.status !== undefined) attempt.statusCode = result.status;
  if (error !== undefined) attempt.error = error;
  await deps.storage.webhookAttempts.addMany([attempt]);
  return {
    messageId: message.meta.messageId,
    type,
    endpointId: target.endpointId ?? DEFAULT_ENDPOINT_ID,
    status: result.outcome,
    statusCode: result.status ?? null,
    latencyMs: attempt.latencyMs,
    error: error ?? null,
  };
}
