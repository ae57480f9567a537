import type { ApiHandler } from '../core/api/handler.js';
import type { ApiResponse } from '../core/api/types.js';
import { limitedBody } from './body.js';
import { bodyText, createHttpTranslation, type HttpInput, type HttpTranslationOptions } from './translate.js';

export type FetchHandlerOptions = HttpTranslationOptions;

function fetchInput(request: Request, url: URL): HttpInput {
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return {
    method: request.method,
    pathname: url.pathname,
    search: url.searchParams,
    headers,
    // A declared empty body is no body, as on Node: a POST with `Content-Length: 0` needs no content type.
    hasBody: request.body !== null && headers['content-length'] !== '0',
    // A web ReadableStream is an async iterable of bytes; the limit is counted as it is read.
    body: (limitBytes, what) => limitedBody(request.body as unknown as AsyncIterable<Uint8Array>, limitBytes, what),
  };
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
  const text = bodyText(response);
  if (text !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
  return new Response(text ?? null, { status: response.status, headers });
}

/**
 * The API as a Fetch API handler, `(Request) => Promise<Response>`: for runtimes and frameworks built on
 * web requests (Hono, Next.js route handlers...), and for running the client in process against a host
 * with no server at all (`inProcessFetch`). Requests outside `prefix` get the handler's 404.
 */
export function createFetchHandler(handler: ApiHandler, options: FetchHandlerOptions = {}): (request: Request) => Promise<Response> {
  const translation = createHttpTranslation(handler, options);
  return async (request) => {
    const url = new URL(request.url);
    const path = translation.innerPath(url.pathname) ?? url.pathname;
    return toResponse(await translation.respond(fetchInput(request, url), path));
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
