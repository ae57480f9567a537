import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ApiHandler } from '../../core/api/handler.js';
import { errorToResponse } from '../../core/api/problem.js';
import type { ApiRequest, ApiResponse } from '../../core/api/types.js';
import { CoreError } from '../../core/errors.js';
import { declaredLength, finishUnreadBody, hasBody, limitedBody, readLimitedBody, tooLarge } from '../koa/http-body.js';

export interface NodeListenerOptions {
  /** Where the API is mounted, e.g. `/api`; the root when absent. */
  prefix?: string;
  /** JSON bodies up to this size. Default 1 MB (as the Koa host). */
  jsonLimitBytes?: number;
  /** CSV and document uploads (streamed) up to this size. Default 200 MB (as the Koa host). */
  uploadLimitBytes?: number;
}

/** `(req, res, next?)`: Node's request listener, and Express/Connect middleware when `next` is given. */
export type NodeListener = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

const JSON_LIMIT_BYTES = 1024 * 1024;
const UPLOAD_LIMIT_BYTES = 200 * 1024 * 1024;

function normalisePrefix(prefix: string | undefined): string {
  if (!prefix || prefix === '/') return '';
  const trimmed = prefix.replace(/\/+$/, '');
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

function queryOf(search: URLSearchParams): ApiRequest['query'] {
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of search) {
    const seen = query[name];
    // Repeated names stay arrays: the signed-URL check refuses them rather than picking one.
    query[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return query;
}

function isJson(contentType: string | undefined): boolean {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
  return mediaType === 'application/json' || (mediaType.startsWith('application/') && mediaType.endsWith('+json'));
}

async function toApiRequest(req: IncomingMessage, path: string, search: URLSearchParams, handler: ApiHandler, limits: Required<Omit<NodeListenerOptions, 'prefix'>>): Promise<ApiRequest> {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  const method = req.method ?? 'GET';
  const request: ApiRequest = { method, path, query: queryOf(search), headers };
  const pattern = handler.routeOf({ method, path });
  const route = pattern ? handler.routes.find((candidate) => candidate.method === method.toUpperCase() && candidate.path === pattern) : undefined;
  if (!route || !hasBody(req)) return request;
  const length = declaredLength(req);
  if (route.rawBody) {
    if (length !== undefined && length > limits.uploadLimitBytes) throw tooLarge(limits.uploadLimitBytes, 'The file');
    // Streamed to blob storage by the core: a large CSV never sits in memory.
    request.bodyStream = limitedBody(req, limits.uploadLimitBytes, 'The file');
    return request;
  }
  if (!isJson(headers['content-type'])) throw new CoreError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as JSON with Content-Type: application/json');
  if (length !== undefined && length > limits.jsonLimitBytes) throw tooLarge(limits.jsonLimitBytes, 'The JSON body');
  const text = (await readLimitedBody(req, limits.jsonLimitBytes, 'The JSON body')).toString('utf8');
  if (text.trim() === '') return request;
  try {
    request.body = JSON.parse(text);
  } catch {
    // The parser's message quotes the body, which may hold PHI.
    throw new CoreError('BAD_REQUEST', 'The body is not valid JSON');
  }
  return request;
}

function write(res: ServerResponse, response: ApiResponse): void {
  res.statusCode = response.status;
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  if (response.stream) {
    Readable.from(response.stream)
      .on('error', () => res.destroy())
      .pipe(res);
    return;
  }
  if (response.body !== undefined && response.status !== 204) {
    if (!res.hasHeader('content-type')) res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(response.body));
    return;
  }
  res.end();
}

/**
 * The API handler as a Node request listener (a bare node:http server, or Express/Connect as
 * middleware): the same translation as the Koa host, with the same body limits. Requests outside `prefix`
 * go to `next` when given, else get the handler's 404 problem.
 */
export function createNodeListener(handler: ApiHandler, options: NodeListenerOptions = {}): NodeListener {
  const prefix = normalisePrefix(options.prefix);
  const limits = { jsonLimitBytes: options.jsonLimitBytes ?? JSON_LIMIT_BYTES, uploadLimitBytes: options.uploadLimitBytes ?? UPLOAD_LIMIT_BYTES };
  return (req, res, next) => {
    const url = new URL(req.url ?? '/', 'http://carebridge.invalid');
    let path: string | undefined = url.pathname;
    if (prefix !== '') path = path === prefix ? '/' : path.startsWith(`${prefix}/`) ? path.slice(prefix.length) : undefined;
    if (path === undefined) {
      if (next) return next();
      path = url.pathname;
    }
    const inner = path;
    void (async () => {
      let response: ApiResponse;
      try {
        response = await handler(await toApiRequest(req, inner, url.searchParams, handler, limits));
      } catch (error) {
        // Only translation problems (413, 415, bad JSON) land here: the handler itself never throws.
        response = errorToResponse(error);
      }
      if (finishUnreadBody(req)) res.setHeader('connection', 'close');
      write(res, response);
    })().catch((error: unknown) => {
      if (!res.headersSent) write(res, errorToResponse(error));
      else res.destroy();
    });
  };
}
