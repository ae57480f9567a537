import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import Koa from 'koa';
import type { Logger } from 'pino';
import type { ApiHandler } from '../core/api/handler.js';
import type { ApiResponse } from '../core/api/types.js';
import { describeError } from '../core/error-facts.js';
import { statusForCode } from '../core/errors.js';
import { finishUnreadBody } from './body.js';
import { nodeInput } from './node.js';
import { bodyText, createHttpTranslation, type HttpTranslationOptions } from './translate.js';

/**
 * `carebridge/koa`: the API as Koa middleware, mountable under any prefix of an existing Koa app (mount it
 * before any body parser: uploads are streamed from the raw request).
 */

export type CarebridgeKoaOptions = HttpTranslationOptions;

export interface KoaAppOptions extends CarebridgeKoaOptions {
  /** `GET /healthz`: its answer; `{status: 'ok'}` when absent. Throwing makes it a 503. */
  health?: () => Promise<Record<string, unknown>>;
}

function writeResponse(ctx: Koa.Context, response: ApiResponse): void {
  ctx.status = response.status;
  for (const [name, value] of Object.entries(response.headers)) ctx.set(name, value);
  const text = response.stream ? undefined : bodyText(response);
  if (response.stream) {
    ctx.body = Readable.from(response.stream);
  } else if (text !== undefined) {
    if (!ctx.response.get('content-type')) ctx.type = 'application/json';
    ctx.body = text;
  } else {
    ctx.body = null;
    // Koa turns a null body into a 204 unless told the status is meant.
    ctx.status = response.status;
  }
}

/**
 * The Koa middleware of the API: the shared HTTP translation, with Koa's context as the request and the
 * response. Requests outside the prefix go to `next`.
 */
export function carebridgeKoaMiddleware(handler: ApiHandler, options: CarebridgeKoaOptions = {}): Koa.Middleware {
  const translation = createHttpTranslation(handler, options);
  return async (ctx, next) => {
    const path = translation.innerPath(ctx.path);
    if (path === undefined) return next();
    const response = await translation.respond(nodeInput(ctx.req, ctx.path, ctx.querystring), path);
    if (finishUnreadBody(ctx.req)) ctx.set('connection', 'close');
    writeResponse(ctx, response);
  };
}

/** The middleware of a carebridge made by `createCarebridge` (or of any API handler). */
export function carebridgeKoa(source: { handler: ApiHandler } | ApiHandler, options: CarebridgeKoaOptions = {}): Koa.Middleware {
  return carebridgeKoaMiddleware(typeof source === 'function' ? source : source.handler, options);
}

/**
 * The standalone Koa application: the API at the root, `/openapi.json`, `/docs` and `/healthz`. Anything
 * else is the handler's 404 problem.
 */
export function createKoaApp(handler: ApiHandler, options: KoaAppOptions = {}): Koa {
  const app = new Koa();
  const logger: Logger | undefined = options.logger;
  // Errors Koa still sees (a response stream failing after its headers went out) are logged without messages.
  app.silent = true;
  app.on('error', (error: unknown) => {
    // A client that hangs up during a download is routine, not a warning.
    const routine = (error as { code?: unknown } | null)?.code === 'ERR_STREAM_PREMATURE_CLOSE';
    (routine ? logger?.debug : logger?.warn)?.call(logger, { err: describeError(error) }, 'response failed after it started');
  });

  app.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/healthz') {
      const started = performance.now();
      try {
        ctx.body = options.health ? await options.health() : { status: 'ok' };
      } catch (error) {
        ctx.status = statusForCode('UNAVAILABLE');
        ctx.type = 'application/problem+json';
        ctx.body = JSON.stringify({ status: ctx.status, title: 'Service Unavailable', detail: 'Not ready: a dependency does not answer', code: 'UNAVAILABLE' });
        logger?.warn({ err: describeError(error) }, 'health check failed');
      }
      logger?.debug({ method: 'GET', route: '/healthz', status: ctx.status, ms: Math.round(performance.now() - started) }, 'request');
      return;
    }
    await next();
  });
  app.use(carebridgeKoaMiddleware(handler, options));
  return app;
}
