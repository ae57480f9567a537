import { ENDPOINTS, type EndpointName, type EndpointOf } from '../../../contract/endpoints.js';
import { CoreError } from '../../errors.js';
import { defineRoute } from '../router.js';

/** The endpoints the table marks as not served. */
type NotServedName = { [N in EndpointName]: EndpointOf<N> extends { notServed: object } ? N : never }[EndpointName];

/**
 * Calls of the published Metriport SDK that carebridge does not serve (the table's `notServed` entries),
 * each answered with a 501 problem (`NOT_IMPLEMENTED`) naming the SDK method and why, rather than a 404
 * that reads like a wrong path. The API key is checked first, as on every route.
 */
function notServed<N extends NotServedName>(name: N) {
  const { operation, reason } = ENDPOINTS[name].notServed;
  return defineRoute(name, {
    async handle() {
      throw new CoreError('NOT_IMPLEMENTED', `${operation} is not served by carebridge: ${reason}`, { details: { operation } });
    },
  });
}

export const unservedRoutes = [
  notServed('syncPatient'),
  notServed('updatePatientTreatmentRelationship'),
  notServed('sendMessage'),
  notServed('listMessages'),
  notServed('getMessage'),
  notServed('createEmbedToken'),
];
