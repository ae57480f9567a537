/**
 * `carebridge/koa`: the API as Koa middleware, mountable under any prefix of an existing Koa app
 * (mount it before any body parser: uploads are streamed from the raw request).
 */
import type Koa from 'koa';
import type { ApiHandler } from '../../core/api/handler.js';
import { carebridgeKoaMiddleware, type CarebridgeKoaOptions } from '../koa/app.js';
import type { Carebridge } from './carebridge.js';

export { carebridgeKoaMiddleware, createKoaApp, type CarebridgeKoaOptions, type KoaAppOptions } from '../koa/app.js';

/** The middleware of a carebridge made by `createCarebridge` (or of any API handler). */
export function carebridgeKoa(source: Carebridge | ApiHandler, options: CarebridgeKoaOptions = {}): Koa.Middleware {
  return carebridgeKoaMiddleware(typeof source === 'function' ? source : source.handler, options);
}
