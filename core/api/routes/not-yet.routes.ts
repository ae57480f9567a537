import { CoreError } from '../../errors.js';
import { defineRoute, type HttpMethod } from '../router.js';

/**
 * Routes of the wire contract whose capability is not built yet. They answer 501 NOT_IMPLEMENTED
 * (after authentication, so they leak nothing) rather than pretend; each moves out of this list when
 * its issue lands.
 */
const PENDING: readonly [HttpMethod, string, string][] = [
];

export const notYetRoutes = PENDING.map(([method, path, tag]) =>
  defineRoute({
    method,
    path,
    auth: 'apiKey',
    tag,
    summary: 'Not implemented yet (501)',
    async handle() {
      throw new CoreError('NOT_IMPLEMENTED', `${method} ${path} is not implemented yet`);
    },
  }),
);
