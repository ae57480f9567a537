/** `carebridge/client`: the Node client of the carebridge API and the helpers of a webhook receiver. */
export { CarebridgeClient, type CarebridgeClientOptions, type UploadSource, type WebhookAttemptQuery, type WriteCondition } from './client.js';
export {
  CarebridgeApiError,
  CarebridgeClientError,
  CarebridgeError,
  CarebridgeNetworkError,
  CarebridgeWebhookError,
  type ApiErrorCode,
  type ClientErrorCode,
  type NetworkErrorCode,
  type ProblemDetails,
} from './errors.js';
export type * from './types.js';
export * from './webhooks.js';
