import { z } from 'zod';
import { normaliseState, normaliseZip, STATE_INVALID, ZIP_INVALID } from '../csv/addresses.js';
import { EMAIL_INVALID, normaliseEmail, normalisePhone, PHONE_INVALID } from '../csv/contacts.js';
import { dobProblem } from '../csv/dates.js';
import { normaliseSsn, SSN_INVALID } from '../csv/identifiers.js';
import { CONTROL_CHARACTER, FIELD_MAX_LENGTH, hasControlCharacter, tooLongMessage, type LimitedField } from '../csv/limits.js';
import { nameProblem } from '../csv/names.js';
import { isValidNpi } from '../../contract/fields/npi.js';
import { FILTERABLE_EVENT_TYPES } from '../webhooks/endpoints.js';
import type * as wire from '../../contract/requests.js';

/**
 * Wire shapes of the public API, after the public Metriport API so its clients work unchanged. The same schemas validate requests, type the client and generate the OpenAPI document.
 */

const text = (max: number) => z.string().trim().min(1).max(max);

/** A patient's free-text field: the CSV import's length limit and rule on characters (core/csv/limits.ts). */
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

/** A first or last name: the CSV import's name rule (core/csv/names.ts), so both refuse the same names. */
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

export const addressSchema = z.object({
  addressLine1: requiredFieldText('addressLine1'),
  addressLine2: optionalFieldText('addressLine2'),
  city: requiredFieldText('city'),
  state: usState,
  zip: z.union([z.string(), z.number()]).transform((value, ctx) => {
    const zip = normaliseZip(String(value));
    if (!zip) {
      ctx.addIssue({ code: 'custom', message: ZIP_INVALID });
      return z.NEVER;
    }
    return zip;
  }),
  country: z.literal('USA').optional().default('USA'),
});
export type AddressInput = z.output<typeof addressSchema>;

export const organizationCreateSchema = z.object({
  name: text(200),
  type: z.enum(['acuteCare', 'ambulatory', 'hospital', 'labSystems', 'pharmacy', 'postAcuteCare']),
  location: addressSchema,
});
export type OrganizationCreate = z.output<typeof organizationCreateSchema>;

export const npiSchema = z.string().refine(isValidNpi, { message: 'must be a valid 10-digit NPI' });

export const facilityCreateSchema = z.object({
  name: text(200),
  npi: npiSchema,
  tin: z.string().trim().max(20).optional().nullable().transform((v) => (v ? v : undefined)),
  active: z.boolean().optional().nullable().transform((v) => v ?? true),
  address: addressSchema,
});
export type FacilityCreate = z.output<typeof facilityCreateSchema>;

export const cohortCreateSchema = z.object({
  name: text(200),
  description: z.string().trim().max(2000).optional(),
});
export type CohortCreate = z.output<typeof cohortCreateSchema>;

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

export const contactSchema = z
  .object({ phone: phoneSchema.optional().nullable(), email: emailSchema.optional().nullable() })
  .refine((c) => c.phone || c.email, { message: 'either phone or email is required' })
  .transform((c) => ({ ...(c.phone ? { phone: c.phone } : {}), ...(c.email ? { email: c.email } : {}) }));

export const personalIdentifierSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('ssn'),
    value: z.string().transform((value, ctx) => {
      const ssn = normaliseSsn(value);
      if (!ssn) {
        ctx.addIssue({ code: 'custom', message: SSN_INVALID });
        return z.NEVER;
      }
      return ssn;
    }),
  }),
  z.object({ type: z.literal('driversLicense'), value: requiredFieldText('driversLicenceNo'), state: usState }),
]);

const oneOrMany = <T extends z.ZodType>(item: T) =>
  z.union([z.array(item), item]).transform((v) => (Array.isArray(v) ? v : [v]) as z.output<T>[]);

export const patientCreateSchema = z.object({
  firstName: nameSchema('firstName'),
  lastName: nameSchema('lastName'),
  dob: dobSchema,
  genderAtBirth: z.enum(['M', 'F', 'O', 'U']),
  personalIdentifiers: z.array(personalIdentifierSchema).max(10).optional().default([]),
  address: oneOrMany(addressSchema).pipe(z.array(z.any()).min(1, 'at least one address is required').max(10)),
  contact: oneOrMany(contactSchema).optional().default([]).pipe(z.array(z.any()).max(10)),
  externalId: optionalFieldText('externalId'),
});
export type PatientCreate = z.output<typeof patientCreateSchema>;

/** Query-string booleans: `true`/`false` in any case; anything else is a 400 naming the parameter. */
export const queryBoolean = z
  .string({ error: (issue) => (issue.input === undefined ? 'required, true or false' : 'must be true or false') })
  .trim()
  .toLowerCase()
  .refine((v) => v === 'true' || v === 'false', { message: 'must be true or false' })
  .transform((v) => v === 'true');

export const uuidSchema = z.string().trim().toLowerCase().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'must be a UUID');

export const bulkStartQuerySchema = z.object({
  facilityId: z.string().trim().min(1).optional(),
  dryRun: queryBoolean.optional().default(false),
});

export const metadataBodySchema = z.object({ metadata: z.unknown().optional() }).passthrough().optional();

export const settingsUpdateSchema = z.object({ webhookUrl: z.string().trim().max(2048) });

const endpointEventTypes = z
  .array(z.string().trim().min(1).max(100))
  .max(20)
  .describe('Message types the endpoint receives: exact (`medical.document-conversion`) or a prefix ending in `.*` (`network-query.*`); empty or absent: every type');

export const webhookEndpointCreateSchema = z.object({
  url: z.string().trim().min(1).max(2048),
  description: z.string().trim().max(500).optional(),
  eventTypes: endpointEventTypes.optional(),
  enabled: z.boolean().optional().describe('Default true: the URL is pinged at once and the endpoint enabled when it answers; false: saved, not pinged, off'),
});

export const webhookEndpointUpdateSchema = z.object({
  url: z.string().trim().min(1).max(2048).optional().describe('A new URL is pinged like a new endpoint'),
  description: z.string().trim().max(500).optional(),
  eventTypes: endpointEventTypes.optional(),
  enabled: z.boolean().optional().describe('true re-enables a disabled endpoint; what waited for it is sent at once'),
});

const utcInstant = z.string().datetime({ offset: false });

export const webhookSecretRotationSchema = z
  .object({
    graceSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 24 * 3600)
      .optional()
      .describe('How long the old secret keeps signing beside the new one; default 86400 (24 h), at most 7 days'),
  })
  .optional();

export const webhookReplaySchema = z
  .object({
    messageId: z.string().trim().min(1).max(200).optional().describe('Replay this one message'),
    parked: z.literal(true).optional().describe('Replay every parked message of the endpoint'),
    since: utcInstant.optional().describe('With until: replay every message of the endpoint created in [since, until)'),
    until: utcInstant.optional(),
  })
  .describe('Exactly one of: messageId; parked: true; since and until');

export const webhookTestEventSchema = z.object({
  type: z.enum(FILTERABLE_EVENT_TYPES).describe('The message type of the sample: any type an endpoint can receive'),
});

/*
 * Compile-time check that these schemas take exactly the request shapes of the wire contract, which the
 * client is typed with: a change to one without the other fails the build.
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? ([keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false) : false) : false;
/** `Agrees<false>` does not compile: the constraint is the check, and nothing of it reaches the built code. */
type Agrees<T extends true> = T;
export type RequestShapesAgree = [
  Agrees<Same<z.input<typeof organizationCreateSchema>, wire.OrganizationCreate>>,
  Agrees<Same<z.input<typeof facilityCreateSchema>, wire.FacilityCreate>>,
  Agrees<Same<z.input<typeof cohortCreateSchema>, wire.CohortCreate>>,
  Agrees<Same<z.input<typeof patientCreateSchema>, wire.PatientCreate>>,
  Agrees<Same<z.input<typeof settingsUpdateSchema>, wire.SettingsUpdate>>,
  Agrees<Same<z.input<typeof webhookEndpointCreateSchema>, wire.WebhookEndpointCreate>>,
  Agrees<Same<z.input<typeof webhookEndpointUpdateSchema>, wire.WebhookEndpointUpdate>>,
  Agrees<Same<z.input<typeof webhookReplaySchema>, wire.WebhookReplay>>,
  Agrees<Same<NonNullable<z.input<typeof webhookSecretRotationSchema>>, wire.WebhookSecretRotation>>,
  Agrees<Same<z.input<typeof webhookTestEventSchema>, wire.WebhookTestEvent>>,
];
