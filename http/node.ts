import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ApiHandler } from '../core/api/handler.js';
import { errorToResponse } from '../core/api/problem.js';
import type { ApiResponse } from '../core/api/types.js';
import { finishUnreadBody, nodeBody, nodeHasBody } from './body.js';
import { bodyText, createHttpTranslation, type HttpInput, type HttpTranslationOptions } from './translate.js';

export type NodeListenerOptions = HttpTranslationOptions;

/** `(req, res, next?)`: Node's request listener, and Express/Connect middleware when `next` is given. */
export type NodeListener = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

/**
 * The translation's view of a Node request (also what the Koa wrapper hands over), from the path and query
 * string as the wrapper has them already parsed.
 */
export function nodeInput(req: IncomingMessage, pathname: string, search: string): HttpInput {
  // Node gives header names in lower case and joins repeated ones, all but set-cookie (a list): the object
  // is used as it is unless a request carries that.
  let headers = req.headers as Record<string, string | undefined>;
  if (req.headers['set-cookie'] !== undefined) {
    headers = {};
    for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return {
    method: req.method ?? 'GET',
    pathname,
    search: new URLSearchParams(search),
    headers,
    // Undefined once the socket is gone: such a request is simply not counted.
    remoteAddress: req.socket.remoteAddress,
    hasBody: nodeHasBody(req),
    body: (limitBytes, what) => nodeBody(req, limitBytes, what),
  };
}

/** Writes an ApiResponse to a Node response; a stream that fails half-way cuts the connection. */
export function writeNodeResponse(res: ServerResponse, response: ApiResponse): void {
  res.statusCode = response.status;
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  if (response.stream) {
    Readable.from(response.stream)
      .on('error', () => res.destroy())
      .pipe(res);
    return;
  }
  const text = bodyText(response);
  if (text !== undefined && !res.hasHeader('content-type')) res.setHeader('content-type', 'application/json');
  res.end(text);
}

/**
 * The API as a Node request listener (a bare node:http server, or Express/Connect as middleware). Requests
 * outside `prefix` go to `next` when given, else get the handler's 404 problem.
 */
export function createNodeListener(handler: ApiHandler, options: NodeListenerOptions = {}): NodeListener {
  const translation = createHttpTranslation(handler, options);
  return (req, res, next) => {
    const url = new URL(req.url ?? '/', 'http://carebridge.invalid');
    let path = translation.innerPath(url.pathname);
    if (path === undefined) {
      if (next) return next();
      path = url.pathname;
    }
    const inner = path;
    void (async () => {
      const response = await translation.respond(nodeInput(req, url.pathname, url.search), inner);
      if (finishUnreadBody(req)) res.setHeader('connection', 'close');
      writeNodeResponse(res, response);
    })().catch((error: unknown) => {
      if (!res.headersSent) writeNodeResponse(res, errorToResponse(error));
      else res.destroy();
    });
  };
}
