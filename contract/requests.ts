import type { WebhookMessageType } from './webhooks.js';

/*
 * The request bodies of the API as a client writes them (before the service's normalisation: a zip may be a
 * number, one address need not be a list). The service validates them with the zod schemas of
 * core/api/schemas.ts, which are checked at compile time to take exactly these shapes.
 */

export type UsStateInput = string;

export interface AddressRequest {
  addressLine1: string;
  addressLine2?: string | null | undefined;
  city: string;
  /** Two-letter code or full name; the service stores the code. */
  state: UsStateInput;
  zip: string | number;
  country?: 'USA' | undefined;
}

export type OrganizationType = 'acuteCare' | 'ambulatory' | 'hospital' | 'labSystems' | 'pharmacy' | 'postAcuteCare';

export interface OrganizationCreate {
  name: string;
  type: OrganizationType;
  location: AddressRequest;
}

export interface FacilityCreate {
  name: string;
  /** A valid 10-digit NPI. */
  npi: string;
  tin?: string | null | undefined;
  active?: boolean | null | undefined;
  address: AddressRequest;
}

export interface CohortCreate {
  name: string;
  description?: string | undefined;
}

export type PersonalIdentifierRequest = { type: 'ssn'; value: string } | { type: 'driversLicense'; value: string; state: UsStateInput };

export interface ContactRequest {
  phone?: string | number | null | undefined;
  email?: string | null | undefined;
}

export interface PatientCreate {
  firstName: string;
  lastName: string;
  /** `YYYY-MM-DD`, not in the future. */
  dob: string;
  genderAtBirth: 'M' | 'F' | 'O' | 'U';
  personalIdentifiers?: PersonalIdentifierRequest[] | undefined;
  address: AddressRequest | AddressRequest[];
  contact?: ContactRequest | ContactRequest[] | undefined;
  externalId?: string | null | undefined;
}

export interface SettingsUpdate {
  webhookUrl: string;
}

export interface WebhookEndpointCreate {
  url: string;
  description?: string | undefined;
  /** Exact message types or `prefix.*`; absent or empty: every type. */
  eventTypes?: string[] | undefined;
  /** Default true (pinged, enabled when it answers). */
  enabled?: boolean | undefined;
}

export interface WebhookEndpointUpdate {
  url?: string | undefined;
  description?: string | undefined;
  eventTypes?: string[] | undefined;
  enabled?: boolean | undefined;
}

/** Exactly one of: `messageId`; `parked: true`; `since` and `until` (ISO 8601 instants, UTC). */
export interface WebhookReplay {
  messageId?: string | undefined;
  parked?: true | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

export interface WebhookSecretRotation {
  /** Seconds the old secret keeps signing beside the new one; default 86400 (24 h), at most 7 days. */
  graceSeconds?: number | undefined;
}

export interface WebhookTestEvent {
  /** The message type of the sample: any type an endpoint can receive (not `ping`). */
  type: Exclude<WebhookMessageType, 'ping'>;
}
