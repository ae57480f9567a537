import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { ApiHandler } from '../core/api/handler.js';
import { buildOpenApiDocument, type OpenApiInfo } from '../core/api/openapi.js';
import { errorToResponse } from '../core/api/problem.js';
import { bodyLimitOf, type RouteDefinition } from '../core/api/router.js';
import type { ApiRequest, ApiResponse } from '../core/api/types.js';
import { describeError } from '../core/error-facts.js';
import { CoreError } from '../core/errors.js';
import { tooLarge } from './body.js';
import { consoleFile } from './console.js';
import { docsFile } from './docs.js';
import { trackRequestFacts, type RequestFacts } from './request-facts.js';

/**
 * One HTTP request as every wrapper (Koa, node:http, fetch) hands it over: what the translation needs and
 * nothing of the framework. The body is opened only when a route will read it.
 */
export interface HttpInput {
  method: string;
  /** The path as received, mount prefix included. */
  pathname: string;
  search: URLSearchParams;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string | undefined>;
  /** The client's address (the socket's peer), when the wrapper knows it: failed API keys are counted per address. */
  remoteAddress?: string;
  /** The request declares a body (a length above 0, or chunked). */
  hasBody: boolean;
  /** Streams the body, failing with PAYLOAD_TOO_LARGE past `limitBytes` (counted on the stream, not trusted from headers). */
  body(limitBytes: number, what: string): AsyncIterable<Uint8Array>;
}

export interface HttpTranslationOptions {
  /** Where the API is mounted, e.g. `/api`; the root when absent. */
  prefix?: string;
  /** Access log: one line per request (method, route pattern, status, ms, account id). None when absent. */
  logger?: Logger;
  /** Overrides every JSON route's body limit (default: each route's own, 1 MB). */
  jsonLimitBytes?: number;
  /** Overrides every upload route's body limit (default: each route's own, 200 MB). */
  uploadLimitBytes?: number;
  /** Serve `/openapi.json` and `/docs` under the prefix. Default true. */
  docs?: boolean;
  /** Serve the browser console, `/console`, under the prefix. Default true. */
  console?: boolean;
  /** Title, version and server URL of the OpenAPI document; the server URL defaults to the prefix. */
  openApi?: OpenApiInfo;
}

export interface HttpTranslation {
  /** The path inside the mount, or `undefined` when the request is not under it. */
  innerPath(pathname: string): string | undefined;
  /**
   * Answers one request under the mount: the OpenAPI document, the docs page, or the handler's answer.
   * Never throws: a body refused before the handler (too large, not JSON) is a problem response.
   */
  respond(input: HttpInput, path: string): Promise<ApiResponse>;
}

export function normalisePrefix(prefix: string | undefined): string {
  if (!prefix || prefix === '/') return '';
  const trimmed = prefix.replace(/\/+$/, '');
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/** Query as the handler takes it: repeated names become arrays (the signed-URL check refuses those). */
function queryOf(search: URLSearchParams): ApiRequest['query'] {
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of search) {
    const seen = query[name];
    query[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return query;
}

function isJsonMediaType(contentType: string | undefined): boolean {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
  return mediaType === 'application/json' || (mediaType.startsWith('application/') && mediaType.endsWith('+json'));
}

function declaredLength(headers: HttpInput['headers']): number | undefined {
  const header = headers['content-length'];
  if (header === undefined) return undefined;
  const length = Number(header);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/**
 * The HTTP translation shared by every wrapper: routing to the docs, body limits from the route
 * definitions (checked against the declared length first, then counted on the stream), JSON parsing, the
 * access log. Wrappers only turn their framework's request into an `HttpInput` and write the response.
 */
export function createHttpTranslation(handler: ApiHandler, options: HttpTranslationOptions = {}): HttpTranslation {
  const prefix = normalisePrefix(options.prefix);
  const routes = new Map<string, RouteDefinition>(handler.routes.map((route) => [`${route.method} ${route.path}`, route]));
  const docs = options.docs ?? true;
  const consolePages = options.console ?? true;
  const logger = options.logger;
  let openApiText: string | undefined;
  const openApi = () => (openApiText ??= JSON.stringify(buildOpenApiDocument(handler.routes, { serverUrl: prefix === '' ? '/' : prefix, ...options.openApi })));

  function limitOf(route: RouteDefinition): number {
    const override = route.rawBody ? options.uploadLimitBytes : options.jsonLimitBytes;
    return override ?? bodyLimitOf(route);
  }

  async function toApiRequest(input: HttpInput, path: string, route: RouteDefinition | undefined): Promise<ApiRequest> {
    const request: ApiRequest = { method: input.method, path, query: queryOf(input.search), headers: input.headers };
    if (input.remoteAddress !== undefined) request.remoteAddress = input.remoteAddress;
    // A body for no route is never read: the handler answers 404/405 and the wrapper discards it.
    if (!route || !input.hasBody) return request;
    const limit = limitOf(route);
    const what = route.rawBody ? 'The file' : 'The JSON body';
    const length = declaredLength(input.headers);
    if (route.rawBody) {
      if (length !== undefined && length > limit) throw tooLarge(limit, what);
      // Handed over unread: the core streams it to blob storage, so a 200 MB file never sits in memory.
      request.bodyStream = input.body(limit, what);
      return request;
    }
    if (!isJsonMediaType(input.headers['content-type'])) {
      throw new CoreError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as JSON with Content-Type: application/json');
    }
    if (length !== undefined && length > limit) throw tooLarge(limit, what);
    const chunks: Uint8Array[] = [];
    for await (const chunk of input.body(limit, what)) chunks.push(chunk);
    const text = Buffer.concat(chunks).toString('utf8');
    if (text.trim() === '') return request;
    try {
      request.body = JSON.parse(text);
    } catch {
      // The parser's message quotes the body, which may hold PHI: say where the problem is, not what it is.
      throw new CoreError('BAD_REQUEST', 'The body is not valid JSON');
    }
    return request;
  }

  return {
    innerPath(pathname) {
      if (prefix === '') return pathname;
      if (pathname === prefix) return '/';
      return pathname.startsWith(`${prefix}/`) ? pathname.slice(prefix.length) : undefined;
    },
    async respond(input, path) {
      const started = performance.now();
      let facts: RequestFacts = {};
      const method = input.method.toUpperCase();
      let route: string | undefined;
      let response: ApiResponse;
      const file = docs && method === 'GET' ? docsPage(prefix, path) : undefined;
      const consolePage = consolePages && method === 'GET' ? consoleOf(prefix, path) : undefined;
      if (docs && method === 'GET' && path === '/openapi.json') {
        route = '/openapi.json';
        response = { status: 200, headers: { 'content-type': 'application/json' }, text: openApi() };
      } else if (file) {
        route = '/docs';
        response = { status: 200, headers: { 'content-type': file.contentType, 'cache-control': 'public, max-age=3600' }, ...file.payload };
      } else if (consolePage) {
        route = '/console';
        response = { status: 200, headers: { 'content-type': consolePage.contentType, ...consolePage.headers }, ...payloadOf(consolePage.body) };
      } else {
        // Only a body needs its route's definition before the handler runs (its limit and media type); a
        // handler made by the runtime reports the route it matched, so other requests are routed once.
        const pattern = input.hasBody ? handler.routeOf({ method, path }) : undefined;
        const definition = pattern ? routes.get(`${method} ${pattern}`) : undefined;
        route = pattern;
        try {
          const request = await toApiRequest(input, path, definition);
          facts = trackRequestFacts(request);
          response = await handler(request);
          route = facts.route ?? pattern ?? (logger ? handler.routeOf({ method, path }) : undefined);
        } catch (error) {
          // Only translation problems (413, 415, bad JSON) reach here: the handler never throws.
          response = errorToResponse(error, (unexpected) => logger?.error({ err: describeError(unexpected) }, 'unexpected error in the HTTP translation'));
        }
      }
      if (logger) {
        const ms = Math.round((performance.now() - started) * 10) / 10;
        // The route pattern, never the raw path or the query: they may carry ids or search text.
        logger.info({ method, route: route ?? null, status: response.status, ms, ...(facts.accountId ? { accountId: facts.accountId } : {}) }, 'request');
      }
      return response;
    },
  };
}

function payloadOf(body: string | Readable): Pick<ApiResponse, 'text' | 'stream'> {
  return typeof body === 'string' ? { text: body } : { stream: body };
}

function docsPage(prefix: string, path: string): { contentType: string; payload: Pick<ApiResponse, 'text' | 'stream'> } | undefined {
  const file = path === '/docs' ? docsFile(prefix, '') : path.startsWith('/docs/') ? docsFile(prefix, path.slice('/docs/'.length)) : undefined;
  if (!file) return undefined;
  return { contentType: file.contentType, payload: payloadOf(file.body) };
}

/** `/console` (also with a trailing slash) or one of its listed assets. */
function consoleOf(prefix: string, path: string) {
  if (path === '/console' || path === '/console/') return consoleFile(prefix, '');
  return path.startsWith('/console/') ? consoleFile(prefix, path.slice('/console/'.length)) : undefined;
}

/** The statuses whose responses carry no body, whatever the handler set. */
export function isBodyless(status: number): boolean {
  return status === 204 || status === 304 || (status >= 100 && status < 200);
}

/** The bytes of a response that is not a stream: its text as is, else its JSON body. */
export function bodyText(response: ApiResponse): string | undefined {
  if (isBodyless(response.status)) return undefined;
  if (response.text !== undefined) return response.text;
  return response.body === undefined ? undefined : JSON.stringify(response.body);
}
