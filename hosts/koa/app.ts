import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import Koa from 'koa';
import type { Logger } from 'pino';
import type { ApiHandler } from '../../core/api/handler.js';
import { buildOpenApiDocument, type OpenApiInfo } from '../../core/api/openapi.js';
import { errorToResponse } from '../../core/api/problem.js';
import type { RouteDefinition } from '../../core/api/router.js';
import type { ApiRequest, ApiResponse } from '../../core/api/types.js';
import { CoreError, statusForCode } from '../../core/errors.js';
import { docsFile, type DocsFile } from './docs.js';
import { declaredLength, finishUnreadBody, hasBody, limitedBody, readLimitedBody, tooLarge } from './http-body.js';
import { withRequestFacts, type RequestFacts } from './request-facts.js';
import { describeError } from '../error-facts.js';

/** JSON bodies up to 1 MB. */
export const JSON_LIMIT_BYTES = 1024 * 1024;
/** CSV uploads up to 200 MB, streamed. */
export const UPLOAD_LIMIT_BYTES = 200 * 1024 * 1024;

export interface CarebridgeKoaOptions {
  /** Where the API is mounted in the Koa app, e.g. `/carebridge`; the root when absent. */
  prefix?: string;
  /** Access log: one line per request (method, route pattern, status, ms, account id). None when absent. */
  logger?: Logger;
  jsonLimitBytes?: number;
  uploadLimitBytes?: number;
  /** Serve `/openapi.json` and `/docs` under the prefix. Default true. */
  docs?: boolean;
  /** Title, version and server URL of the OpenAPI document; the server URL defaults to the prefix. */
  openApi?: OpenApiInfo;
}

export interface KoaAppOptions extends CarebridgeKoaOptions {
  /** `GET /healthz`: its answer; `{status: 'ok'}` when absent. Throwing makes it a 503. */
  health?: () => Promise<Record<string, unknown>>;
}

function normalisePrefix(prefix: string | undefined): string {
  if (!prefix || prefix === '/') return '';
  const trimmed = prefix.replace(/\/+$/, '');
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/** The path inside the mount, or `undefined` when the request is not under it. */
function innerPath(path: string, prefix: string): string | undefined {
  if (prefix === '') return path;
  if (path === prefix) return '/';
  return path.startsWith(`${prefix}/`) ? path.slice(prefix.length) : undefined;
}

/** Query as the handler takes it: repeated names become arrays (the signed-URL check refuses those). */
function queryOf(search: string): ApiRequest['query'] {
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(search)) {
    const seen = query[name];
    if (seen === undefined) query[name] = value;
    else query[name] = Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return query;
}

function headersOf(req: Koa.Context['req']): Record<string, string | undefined> {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function isJsonMediaType(contentType: string | undefined): boolean {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
  return mediaType === 'application/json' || (mediaType.startsWith('application/') && mediaType.endsWith('+json'));
}

function writeResponse(ctx: Koa.Context, response: ApiResponse): void {
  ctx.status = response.status;
  for (const [name, value] of Object.entries(response.headers)) ctx.set(name, value);
  if (response.stream) {
    ctx.body = Readable.from(response.stream);
  } else if (response.body !== undefined && response.status !== 204 && response.status !== 304) {
    if (!ctx.response.get('content-type')) ctx.type = 'application/json';
    ctx.body = JSON.stringify(response.body);
  } else {
    ctx.body = null;
    // Koa turns a null body into a 204 unless told the status is meant.
    ctx.status = response.status;
  }
}

interface Translation {
  routes: Map<string, RouteDefinition>;
  jsonLimitBytes: number;
  uploadLimitBytes: number;
}

/** The ApiRequest of a Koa request, or the problem that stops it before the handler (413, 415, 400). */
async function toApiRequest(ctx: Koa.Context, path: string, route: RouteDefinition | undefined, t: Translation): Promise<ApiRequest> {
  const request: ApiRequest = { method: ctx.method, path, query: queryOf(ctx.querystring), headers: headersOf(ctx.req) };
  // A body for no route is never read: the handler answers 404/405 and Node discards it.
  if (!route || !hasBody(ctx.req)) return request;

  if (route.rawBody) {
    const length = declaredLength(ctx.req);
    if (length !== undefined && length > t.uploadLimitBytes) throw tooLarge(t.uploadLimitBytes, 'The file');
    // Handed over unread: the core streams it to blob storage, so a 200 MB file never sits in memory.
    request.bodyStream = limitedBody(ctx.req, t.uploadLimitBytes, 'The file');
    return request;
  }

  if (!isJsonMediaType(ctx.get('content-type'))) {
    throw new CoreError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as JSON with Content-Type: application/json');
  }
  const length = declaredLength(ctx.req);
  if (length !== undefined && length > t.jsonLimitBytes) throw tooLarge(t.jsonLimitBytes, 'The JSON body');
  const raw = await readLimitedBody(ctx.req, t.jsonLimitBytes, 'The JSON body');
  const text = new TextDecoder().decode(raw);
  if (text.trim() === '') return request;
  try {
    request.body = JSON.parse(text);
  } catch {
    // The parser's message quotes the body, which may hold PHI: say where the problem is, not what it is.
    throw new CoreError('BAD_REQUEST', 'The body is not valid JSON');
  }
  return request;
}

/**
 * The Koa middleware of the API, mountable under any prefix of an existing Koa app: it translates
 * a Koa request into the handler's plain request and the plain response back, and serves the OpenAPI
 * document and the docs page. No business rule lives here: routing, authentication, validation and status
 * codes are the handler's. Requests outside the prefix go to `next`.
 */
export function carebridgeKoaMiddleware(handler: ApiHandler, options: CarebridgeKoaOptions = {}): Koa.Middleware {
  const prefix = normalisePrefix(options.prefix);
  const t: Translation = {
    routes: new Map(handler.routes.map((route) => [`${route.method} ${route.path}`, route])),
    jsonLimitBytes: options.jsonLimitBytes ?? JSON_LIMIT_BYTES,
    uploadLimitBytes: options.uploadLimitBytes ?? UPLOAD_LIMIT_BYTES,
  };
  const docs = options.docs ?? true;
  let openApiText: string | undefined;
  const openApi = () =>
    (openApiText ??= JSON.stringify(buildOpenApiDocument(handler.routes, { serverUrl: prefix === '' ? '/' : prefix, ...options.openApi })));
  const logger = options.logger;

  return async (ctx, next) => {
    const path = innerPath(ctx.path, prefix);
    if (path === undefined) return next();
    const started = performance.now();
    const facts: RequestFacts = {};
    let route: string | undefined;
    let file: DocsFile | undefined;

    if (docs && ctx.method === 'GET' && path === '/openapi.json') {
      route = '/openapi.json';
      ctx.type = 'application/json';
      ctx.body = openApi();
    } else if (docs && ctx.method === 'GET' && (file = docsPage(prefix, path))) {
      route = '/docs';
      ctx.type = file.contentType;
      ctx.set('cache-control', 'public, max-age=3600');
      ctx.body = file.body;
    } else {
      const pattern = handler.routeOf({ method: ctx.method, path });
      route = pattern;
      const definition = pattern ? t.routes.get(`${ctx.method.toUpperCase()} ${pattern}`) : undefined;
      let response: ApiResponse;
      try {
        const request = await toApiRequest(ctx, path, definition, t);
        response = await withRequestFacts(facts, () => handler(request));
      } catch (error) {
        // Only translation problems (413, 415, bad JSON) reach here: the handler never throws.
        response = errorToResponse(error, (unexpected) => logger?.error({ err: describeError(unexpected) }, 'unexpected error in the Koa translation'));
      }
      if (finishUnreadBody(ctx.req)) ctx.set('connection', 'close');
      writeResponse(ctx, response);
    }

    if (logger) {
      const ms = Math.round((performance.now() - started) * 10) / 10;
      // The route pattern, never the raw path or the query: they may carry ids or search text.
      logger.info({ method: ctx.method, route: route ?? null, status: ctx.status, ms, ...(facts.accountId ? { accountId: facts.accountId } : {}) }, 'request');
    }
  };
}

function docsPage(prefix: string, path: string): DocsFile | undefined {
  if (path === '/docs') return docsFile(prefix, '');
  return path.startsWith('/docs/') ? docsFile(prefix, path.slice('/docs/'.length)) : undefined;
}


/**
 * The standalone Koa application: the API at the root, `/openapi.json`, `/docs` and `/healthz`. Anything
 * else is the handler's 404 problem.
 */
export function createKoaApp(handler: ApiHandler, options: KoaAppOptions = {}): Koa {
  const app = new Koa();
  const logger = options.logger;
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
