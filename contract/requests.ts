import { z } from 'zod';
import { COUNTRY, normaliseState, normaliseZip, STATE_INVALID, ZIP_INVALID } from './fields/addresses.js';
import { EMAIL_INVALID, normaliseEmail, normalisePhone, PHONE_INVALID } from './fields/contacts.js';
import { dobProblem } from './fields/dates.js';
import { normaliseSsn, SSN_INVALID } from './fields/identifiers.js';
import { CONTROL_CHARACTER, FIELD_MAX_LENGTH, hasControlCharacter, tooLongMessage, type LimitedField } from './fields/limits.js';
import { nameProblem } from './fields/names.js';
import { isValidNpi } from './fields/npi.js';
import { FILTERABLE_EVENT_TYPES } from './webhooks.js';

/*
 * The request bodies of the API, written once: the service validates and normalises with these schemas
 * (the body a handler gets is their output), the OpenAPI document describes them, and a client writes their
 * input (before the service's normalisation: a zip may be a number, one address need not be a list).
 */

/**
 * `z.object`, typed by the shape as written. z.object's own type maps the shape, and a mapped field loses
 * its JSDoc in the emitted declarations: an embedder's editor would show the client's request types with
 * none of the docs below (client/declarations.test.ts).
 */
const object = <S extends z.core.$ZodLooseShape>(shape: S): z.ZodObject<S> => z.object(shape);

const text = (max: number) => z.string().trim().min(1).max(max);

/** A patient's free-text field: the length limit and rule on characters the CSV import applies too (fields/limits.ts). */
const fieldText = (field: LimitedField, minLength: 0 | 1) =>
  z
    .string()
    .trim()
    .min(minLength)
    .max(FIELD_MAX_LENGTH[field], tooLongMessage(field))
    .refine((value) => !hasControlCharacter(value), CONTROL_CHARACTER);

const requiredFieldText = (field: LimitedField) => fieldText(field, 1);

const optionalFieldText = (field: LimitedField) =>
  fieldText(field, 0)
    .optional()
    .nullable()
    .transform((v) => (v ? v : undefined));

/** A first or last name: the name rule the CSV import applies too (fields/names.ts), so both refuse the same names. */
const nameSchema = (field: 'firstName' | 'lastName') =>
  z
    .string()
    .trim()
    .min(1)
    .max(FIELD_MAX_LENGTH[field], tooLongMessage(field))
    .superRefine((value, ctx) => {
      const problem = value === '' ? undefined : nameProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });

export const usState = z.string().transform((value, ctx) => {
  const state = normaliseState(value);
  if (!state) {
    ctx.addIssue({ code: 'custom', message: STATE_INVALID });
    return z.NEVER;
  }
  return state;
});

export const addressSchema = object({
  /** The street address: one line of visible text, at most 200 characters. */
  addressLine1: requiredFieldText('addressLine1'),
  /** Apartment, suite, floor...: at most 200 characters; empty or null is none. */
  addressLine2: optionalFieldText('addressLine2'),
  /** At most 100 characters. */
  city: requiredFieldText('city'),
  /** A two-letter US state code in any case; the service stores it upper-case. */
  state: usState,
  /** 5 digits, or ZIP+4 (`12345-6789` or 9 digits); the service stores the first 5. */
  zip: z.union([z.string(), z.number()]).transform((value, ctx) => {
    const zip = normaliseZip(String(value));
    if (!zip) {
      ctx.addIssue({ code: 'custom', message: ZIP_INVALID });
      return z.NEVER;
    }
    return zip;
  }),
  /** `USA`, the only country served; the default. */
  country: z.literal(COUNTRY).optional().default(COUNTRY),
});

export const organizationCreateSchema = object({
  name: text(200),
  type: z.enum(['acuteCare', 'ambulatory', 'hospital', 'labSystems', 'pharmacy', 'postAcuteCare']),
  location: addressSchema,
});

export const npiSchema = z.string().refine(isValidNpi, { message: 'must be a valid 10-digit NPI' });

export const facilityCreateSchema = object({
  name: text(200),
  /** A valid 10-digit NPI. */
  npi: npiSchema,
  tin: z.string().trim().max(20).optional().nullable().transform((v) => (v ? v : undefined)),
  active: z.boolean().optional().nullable().transform((v) => v ?? true),
  address: addressSchema,
});

export const cohortCreateSchema = object({
  name: text(200),
  description: z.string().trim().max(2000).optional(),
});

const dobSchema = z.string().superRefine((value, ctx) => {
  // Validity of a date of birth depends on today; the use case re-checks "not in the future" with the clock.
  const problem = dobProblem(value, '9999-12-31');
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const phoneSchema = z.union([z.string(), z.number()]).transform((value, ctx) => {
  const phone = normalisePhone(String(value));
  if (!phone) {
    ctx.addIssue({ code: 'custom', message: PHONE_INVALID });
    return z.NEVER;
  }
  return phone;
});

const emailSchema = z.string().transform((value, ctx) => {
  const email = normaliseEmail(value);
  if (!email) {
    ctx.addIssue({ code: 'custom', message: EMAIL_INVALID });
    return z.NEVER;
  }
  return email;
});

export const contactSchema = object({
  /** 10 digits (separators and a leading `1` or `+1` allowed), as a string or a number; the service keeps the 10 digits. */
  phone: phoneSchema.optional().nullable(),
  /** An email address, at most 254 characters; the service lower-cases its domain. */
  email: emailSchema.optional().nullable(),
})
  .refine((c) => c.phone || c.email, { message: 'either phone or email is required' })
  .transform((c) => ({ ...(c.phone ? { phone: c.phone } : {}), ...(c.email ? { email: c.email } : {}) }));

export const personalIdentifierSchema = z.discriminatedUnion('type', [
  object({
    /** A social security number. */
    type: z.literal('ssn'),
    /** 9 digits; dashes and spaces are dropped. */
    value: z.string().transform((value, ctx) => {
      const ssn = normaliseSsn(value);
      if (!ssn) {
        ctx.addIssue({ code: 'custom', message: SSN_INVALID });
        return z.NEVER;
      }
      return ssn;
    }),
  }),
  object({
    /** A driver's licence. */
    type: z.literal('driversLicense'),
    /** The licence number: at most 50 characters. */
    value: requiredFieldText('driversLicenceNo'),
    /** The two-letter code of the state that issued it, in any case. */
    state: usState,
  }),
]);

const oneOrMany = <T extends z.ZodType>(item: T) =>
  z.union([z.array(item), item]).transform((v) => (Array.isArray(v) ? v : [v]) as z.output<T>[]);

export const patientCreateSchema = object({
  /** At most 200 characters, starting with a letter (not `=`, `+`, `-` or `@`), with no control or text-direction characters. */
  firstName: nameSchema('firstName'),
  /** As `firstName`. */
  lastName: nameSchema('lastName'),
  /** `YYYY-MM-DD`, not in the future. */
  dob: dobSchema,
  /** `M`, `F`, `O` (other) or `U` (unknown). */
  genderAtBirth: z.enum(['M', 'F', 'O', 'U']),
  /** At most 10: social security numbers and driver's licences. */
  personalIdentifiers: z.array(personalIdentifierSchema).max(10).optional().default([]),
  /** One address, or a list of 1 to 10. */
  address: oneOrMany(addressSchema).pipe(z.array(z.any()).min(1, 'at least one address is required').max(10)),
  /** One contact, or a list of at most 10; each has a phone, an email or both. */
  contact: oneOrMany(contactSchema).optional().default([]).pipe(z.array(z.any()).max(10)),
  /** Your own id for the patient, to find it by (`GET /patient/external-id`): at most 256 characters; empty or null is none. */
  externalId: optionalFieldText('externalId'),
});

export const settingsUpdateSchema = object({ webhookUrl: z.string().trim().max(2048) });

const endpointEventTypes = z
  .array(z.string().trim().min(1).max(100))
  .max(20)
  .describe('Message types the endpoint receives: exact (`medical.document-conversion`) or a prefix ending in `.*` (`network-query.*`); empty or absent: every type');

export const webhookEndpointCreateSchema = object({
  /** Where messages are POSTed: at most 2048 characters. */
  url: z.string().trim().min(1).max(2048),
  /** Your note on the endpoint: at most 500 characters. */
  description: z.string().trim().max(500).optional(),
  /** Exact message types or `prefix.*`; absent or empty: every type. */
  eventTypes: endpointEventTypes.optional(),
  /** Default true (pinged, enabled when it answers). */
  enabled: z.boolean().optional().describe('Default true: the URL is pinged at once and the endpoint enabled when it answers; false: saved, not pinged, off'),
});

export const webhookEndpointUpdateSchema = object({
  url: z.string().trim().min(1).max(2048).optional().describe('A new URL is pinged like a new endpoint'),
  description: z.string().trim().max(500).optional(),
  eventTypes: endpointEventTypes.optional(),
  enabled: z.boolean().optional().describe('true re-enables a disabled endpoint; what waited for it is sent at once'),
});

const utcInstant = z.string().datetime({ offset: false });

export const webhookSecretRotationSchema = object({
  /** Seconds the old secret keeps signing beside the new one; default 86400 (24 h), at most 7 days. */
  graceSeconds: z
    .number()
    .int()
    .min(0)
    .max(7 * 24 * 3600)
    .optional()
    .describe('How long the old secret keeps signing beside the new one; default 86400 (24 h), at most 7 days'),
}).optional();

export const webhookReplaySchema = object({
  messageId: z.string().trim().min(1).max(200).optional().describe('Replay this one message'),
  parked: z.literal(true).optional().describe('Replay every parked message of the endpoint'),
  since: utcInstant.optional().describe('With until: replay every message of the endpoint created in [since, until)'),
  until: utcInstant.optional(),
}).describe('Exactly one of: messageId; parked: true; since and until');

export const webhookTestEventSchema = object({
  /** The message type of the sample: any type an endpoint can receive (not `ping`). */
  type: z.enum(FILTERABLE_EVENT_TYPES).describe('The message type of the sample: any type an endpoint can receive'),
});

// What a client writes: the input of each schema.
export type UsStateInput = z.input<typeof usState>;
export type AddressRequest = z.input<typeof addressSchema>;
export type OrganizationCreate = z.input<typeof organizationCreateSchema>;
export type OrganizationType = OrganizationCreate['type'];
export type FacilityCreate = z.input<typeof facilityCreateSchema>;
export type CohortCreate = z.input<typeof cohortCreateSchema>;
export type PersonalIdentifierRequest = z.input<typeof personalIdentifierSchema>;
export type ContactRequest = z.input<typeof contactSchema>;
export type PatientCreate = z.input<typeof patientCreateSchema>;
export type SettingsUpdate = z.input<typeof settingsUpdateSchema>;
export type WebhookEndpointCreate = z.input<typeof webhookEndpointCreateSchema>;
export type WebhookEndpointUpdate = z.input<typeof webhookEndpointUpdateSchema>;
/** Exactly one of: `messageId`; `parked: true`; `since` and `until` (ISO 8601 instants, UTC). */
export type WebhookReplay = z.input<typeof webhookReplaySchema>;
export type WebhookSecretRotation = NonNullable<z.input<typeof webhookSecretRotationSchema>>;
export type WebhookTestEvent = z.input<typeof webhookTestEventSchema>;
