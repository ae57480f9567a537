import type { ApiHandler } from '../../core/api/handler.js';
import { errorToResponse } from '../../core/api/problem.js';
import type { ApiRequest, ApiResponse } from '../../core/api/types.js';
import { CoreError } from '../../core/errors.js';

export interface FetchHandlerOptions {
  /** Where the API is mounted, e.g. `/api`; the root when absent. */
  prefix?: string;
  /** JSON bodies up to this size. Default 1 MB (as the Koa host). */
  jsonLimitBytes?: number;
}

const JSON_LIMIT_BYTES = 1024 * 1024;

function isJson(contentType: string | null): boolean {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
  return mediaType === 'application/json' || (mediaType.startsWith('application/') && mediaType.endsWith('+json'));
}

async function toApiRequest(request: Request, path: string, handler: ApiHandler, jsonLimitBytes: number): Promise<ApiRequest> {
  const url = new URL(request.url);
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of url.searchParams) {
    const seen = query[name];
    query[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const api: ApiRequest = { method: request.method, path, query, headers };
  const pattern = handler.routeOf({ method: request.method, path });
  const route = pattern ? handler.routes.find((candidate) => candidate.method === request.method.toUpperCase() && candidate.path === pattern) : undefined;
  if (!route || request.body === null) return api;
  if (route.rawBody) {
    // A web ReadableStream is an async iterable of bytes: the core streams it to blob storage.
    api.bodyStream = request.body as unknown as AsyncIterable<Uint8Array>;
    return api;
  }
  if (!isJson(request.headers.get('content-type'))) throw new CoreError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as JSON with Content-Type: application/json');
  const text = await request.text();
  if (Buffer.byteLength(text) > jsonLimitBytes) throw new CoreError('PAYLOAD_TOO_LARGE', `The JSON body is larger than ${jsonLimitBytes} bytes`);
  if (text.trim() === '') return api;
  try {
    api.body = JSON.parse(text);
  } catch {
    throw new CoreError('BAD_REQUEST', 'The body is not valid JSON');
  }
  return api;
}

function toResponse(response: ApiResponse): Response {
  const headers = new Headers(response.headers);
  if (response.stream) {
    const source = response.stream[Symbol.asyncIterator]();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await source.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel() {
        await source.return?.();
      },
    });
    return new Response(body, { status: response.status, headers });
  }
  if (response.body === undefined || response.status === 204) return new Response(null, { status: response.status, headers });
  if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  return new Response(JSON.stringify(response.body), { status: response.status, headers });
}

/**
 * The API handler as a Fetch API handler, `(Request) => Promise<Response>`: for runtimes and frameworks
 * built on web requests (Hono, Next.js route handlers...), and for running the client in process against
 * a host with no server at all (`inProcessFetch`). Requests outside `prefix` get the handler's 404.
 */
export function createFetchHandler(handler: ApiHandler, options: FetchHandlerOptions = {}): (request: Request) => Promise<Response> {
  const prefix = !options.prefix || options.prefix === '/' ? '' : `/${options.prefix.replace(/^\/+|\/+$/g, '')}`;
  const jsonLimitBytes = options.jsonLimitBytes ?? JSON_LIMIT_BYTES;
  return async (request) => {
    const pathname = new URL(request.url).pathname;
    const path = prefix === '' ? pathname : pathname === prefix ? '/' : pathname.startsWith(`${prefix}/`) ? pathname.slice(prefix.length) : pathname;
    try {
      return toResponse(await handler(await toApiRequest(request, path, handler, jsonLimitBytes)));
    } catch (error) {
      return toResponse(errorToResponse(error));
    }
  };
}

/**
 * A `fetch` that never leaves the process: every request goes to the handler. Give it to the client
 * (`new CarebridgeClient({ apiKey, baseUrl, fetch: inProcessFetch(host.handler) })`) to use the sandbox
 * host with no port at all.
 */
export function inProcessFetch(handler: ApiHandler, options: FetchHandlerOptions = {}): typeof fetch {
  const handle = createFetchHandler(handler, options);
  return (input, init) => handle(new Request(input, init));
}
