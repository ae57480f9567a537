/**
 * `carebridge/memory`: the sandbox host, every adapter in memory and nothing persisted, for trying an
 * integration with no database. Serve it with `carebridge/koa`, `createNodeListener`, or in process with
 * `inProcessFetch(host.handler)` as the client's fetch.
 */
export { MemoryHost, type MemoryHostOptions } from './memory.host.js';
export { createFetchHandler, inProcessFetch, type FetchHandlerOptions } from '../../http/fetch.js';
