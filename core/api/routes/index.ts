import type { EndpointName } from '../../../contract/endpoints.js';
import type { RouteDefinition } from '../router.js';
import { bulkRoutes } from './bulk.routes.js';
import { consolidatedRoutes } from './consolidated.routes.js';
import { documentRoutes } from './documents.routes.js';
import { cohortRoutes, facilityRoutes, organizationRoutes, patientRoutes } from './entities.routes.js';
import { networkRoutes } from './network.routes.js';
import { settingsRoutes } from './settings.routes.js';
import { unservedRoutes } from './unserved.routes.js';

const routes = [
  ...organizationRoutes,
  ...facilityRoutes,
  ...cohortRoutes,
  ...patientRoutes,
  ...bulkRoutes,
  ...settingsRoutes,
  ...documentRoutes,
  ...consolidatedRoutes,
  ...networkRoutes,
  ...unservedRoutes,
];

/**
 * Does not compile while an endpoint of the table has no route: its name is a missing key here. A route
 * can only name an endpoint of the table (`defineRoute`); `routes.test.ts` checks each is served once.
 */
const unserved: Record<Exclude<EndpointName, (typeof routes)[number]['name']>, never> = {};
void unserved;

export const apiRoutes: readonly RouteDefinition[] = routes;
