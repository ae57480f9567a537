import { CoreError } from '../../errors.js';
import { defineRoute, type HttpMethod, type RouteDefinition } from '../router.js';

/**
 * Calls of the published Metriport SDK that carebridge does not serve, each answered with a 501 problem
 * (`NOT_IMPLEMENTED`) naming the SDK method and why, rather than a 404 that reads like a wrong path. The
 * API key is checked first, as on every route.
 */
function notServed(method: HttpMethod, path: string, operation: string, reason: string): RouteDefinition {
  return defineRoute({
    method,
    path,
    auth: 'apiKey',
    tag: 'Not served',
    summary: `Not served (SDK ${operation}): ${reason}`,
    success: { status: 501, mediaType: 'application/problem+json' },
    async handle() {
      throw new CoreError('NOT_IMPLEMENTED', `${operation} is not served by carebridge: ${reason}`, { details: { operation } });
    },
  });
}

const V1 = '/medical/v1';
const MESSAGING = 'there is no messaging network (Direct or network messages) to deliver to';

export const unservedRoutes = [
  notServed('POST', `${V1}/patient/:id/external/sync`, 'syncPatient', 'it maps patients to EHR systems (Healthie, Elation...), and carebridge connects to none'),
  notServed(
    'PUT',
    `${V1}/patient/:id/treatment-relationship`,
    'updatePatientTreatmentRelationship',
    'treatment-relationship consent gates exchange on production networks; the sandbox networks ask for none, and opt-out (hie-opt-out) is the consent carebridge enforces',
  ),
  notServed('POST', `${V1}/message`, 'sendMessage', MESSAGING),
  notServed('GET', `${V1}/message`, 'listMessages', MESSAGING),
  notServed('GET', `${V1}/message/:messageId`, 'getMessage', MESSAGING),
  notServed('POST', `${V1}/token/embed`, 'createEmbedToken', 'carebridge ships no embeddable user interface components for such a token to open'),
];
