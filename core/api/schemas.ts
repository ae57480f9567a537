import { z } from 'zod';
import {
  addressSchema,
  cohortCreateSchema,
  facilityCreateSchema,
  organizationCreateSchema,
  patientCreateSchema,
} from '../../contract/requests.js';

// The request bodies are the wire contract's (contract/requests.ts): the same schemas validate here and type the client.
export {
  addressSchema,
  cohortCreateSchema,
  contactSchema,
  facilityCreateSchema,
  npiSchema,
  organizationCreateSchema,
  patientCreateSchema,
  personalIdentifierSchema,
  settingsUpdateSchema,
  usState,
  webhookEndpointCreateSchema,
  webhookEndpointUpdateSchema,
  webhookReplaySchema,
  webhookSecretRotationSchema,
  webhookTestEventSchema,
} from '../../contract/requests.js';

// What the use cases get: a body after validation and normalisation.
export type AddressInput = z.output<typeof addressSchema>;
export type OrganizationCreate = z.output<typeof organizationCreateSchema>;
export type FacilityCreate = z.output<typeof facilityCreateSchema>;
export type CohortCreate = z.output<typeof cohortCreateSchema>;
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
