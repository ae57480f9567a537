import type { RouteDefinition } from '../router.js';
import { bulkRoutes } from './bulk.routes.js';
import { consolidatedRoutes } from './consolidated.routes.js';
import { documentRoutes } from './documents.routes.js';
import { cohortRoutes, facilityRoutes, organizationRoutes, patientRoutes } from './entities.routes.js';
import { networkRoutes } from './network.routes.js';
import { settingsRoutes } from './settings.routes.js';
import { unservedRoutes } from './unserved.routes.js';

export const apiRoutes: readonly RouteDefinition[] = [
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
