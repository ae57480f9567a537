import type { z } from 'zod';
import type { CoreDeps } from '../deps.js';
import type { Account } from '../domain/types.js';
import type { VersionCondition } from '../entities/patients.js';
import type { ApiRequest, ApiResponse } from './types.js';
import { ENDPOINTS, type Endpoint, type EndpointAuth, type EndpointName, type EndpointOf, type HttpMethod, type PathParams } from '../../contract/endpoints.js';

export type { HttpMethod, PathParamNames, PathParams } from '../../contract/endpoints.js';

/** How a route is authorised: see `EndpointAuth`. */
export type RouteAuth = EndpointAuth;

/** The account a handler sees: none on a route without authorisation, the caller's on every other. */
export type AccountOf<A extends EndpointAuth> = A extends 'none' ? undefined : Account;

export interface RouteContext<Q = Record<string, string | undefined>, B = unknown, PP = Record<string, string>, A extends Account | undefined = Account | undefined> {
  deps: CoreDeps;
  request: ApiRequest;
  params: PP;
  query: Q;
  body: B;
  /** The caller's account, on every route whose auth is not `none`. */
  account: A;
  /** The request's `If-Match`, for a route that declares `ifMatch`; undefined when it sent none. */
  condition: VersionCondition | undefined;
}

/** What the core adds to an endpoint of the table: its request validators (built on the core's normalisers) and its handler. */
export interface RouteImplementation<QS extends z.ZodType, BS extends z.ZodType, E extends Endpoint> {
  query?: QS;
  body?: BS;
  /**
   * Largest body the route accepts, in bytes, enforced on the stream by every HTTP translation: a JSON
   * body is buffered up to it, a raw body is streamed and cut off past it. Default `bodyLimitOf`.
   */
  bodyLimitBytes?: number;
  handle(context: RouteContext<z.output<QS>, z.output<BS>, string extends E['path'] ? Record<string, string> : PathParams<E['path']>, AccountOf<E['auth']>>): Promise<ApiResponse>;
}

/** A served endpoint: its entry of the table (method, path and wire facts), named, with the core's implementation. */
export interface RouteDefinition extends Endpoint {
  name: string;
  query?: z.ZodType;
  body?: z.ZodType;
  bodyLimitBytes?: number;
  handle(context: RouteContext<unknown, unknown>): Promise<ApiResponse>;
}

/** The route of endpoint `name`: its handler sees its own parsed query and body, its path's params and its account. */
export function defineRoute<N extends EndpointName, QS extends z.ZodType = z.ZodType, BS extends z.ZodType = z.ZodType>(
  name: N,
  implementation: RouteImplementation<QS, BS, EndpointOf<N>>,
): RouteDefinition & { name: N } {
  return routeFor(name, ENDPOINTS[name], implementation) as RouteDefinition & { name: N };
}

/** A route of an endpoint given whole rather than by its name in the table (tests of the router). */
export function routeFor<const E extends Endpoint, QS extends z.ZodType = z.ZodType, BS extends z.ZodType = z.ZodType>(
  name: string,
  endpoint: E,
  implementation: RouteImplementation<QS, BS, E>,
): RouteDefinition {
  // The handler's context is typed by this endpoint; the router calls every route alike.
  return { name, ...endpoint, ...implementation } as unknown as RouteDefinition;
}

/** JSON bodies are read whole before parsing: 1 MB keeps one request's memory small. */
export const JSON_BODY_LIMIT_BYTES = 1024 * 1024;
/** Uploads (CSV, documents) are streamed to blob storage: 200 MB, never held in memory. */
export const UPLOAD_BODY_LIMIT_BYTES = 200 * 1024 * 1024;

/** The body limit of a route: its own, else 200 MB for a streamed upload and 1 MB for JSON. */
export function bodyLimitOf(route: Pick<RouteDefinition, 'rawBody' | 'bodyLimitBytes'>): number {
  return route.bodyLimitBytes ?? (route.rawBody ? UPLOAD_BODY_LIMIT_BYTES : JSON_BODY_LIMIT_BYTES);
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): ApiResponse {
  return { status, headers: { 'content-type': 'application/json', ...headers }, body };
}

export function noContent(): ApiResponse {
  return { status: 204, headers: {} };
}

interface CompiledRoute {
  route: RouteDefinition;
  segments: string[];
}

export type RouteMatch = { kind: 'found'; route: RouteDefinition; params: Record<string, string> } | { kind: 'wrong-method'; allowed: HttpMethod[] } | { kind: 'none' };

/** Matches paths segment by segment; literal segments win over params, so `/patient/bulk` is not `/patient/:id`. */
export class Router {
  /** Routes by segment count, most specific first: a request only walks the routes of its own length. */
  private readonly byLength = new Map<number, CompiledRoute[]>();

  constructor(readonly routes: readonly RouteDefinition[]) {
    const compiled = routes
      .map((route) => ({ route, segments: route.path.split('/').filter(Boolean) }))
      .sort((a, b) => specificity(b.segments) - specificity(a.segments));
    for (const entry of compiled) {
      const same = this.byLength.get(entry.segments.length);
      if (same) same.push(entry);
      else this.byLength.set(entry.segments.length, [entry]);
    }
  }

  match(method: string, path: string): RouteMatch {
    const candidates = this.byLength.get(countSegments(path));
    if (!candidates) return { kind: 'none' };
    const segments = decodedSegments(path);
    // A segment that is not valid percent-encoding matches no route.
    if (!segments) return { kind: 'none' };
    const wanted = method.toUpperCase();
    const allowed: HttpMethod[] = [];
    for (const { route, segments: pattern } of candidates) {
      if (!matchesSegments(pattern, segments)) continue;
      if (route.method === wanted) return { kind: 'found', route, params: paramsOf(pattern, segments) };
      allowed.push(route.method);
    }
    return allowed.length > 0 ? { kind: 'wrong-method', allowed } : { kind: 'none' };
  }
}

function countSegments(path: string): number {
  let count = 0;
  let inSegment = false;
  for (let i = 0; i < path.length; i++) {
    if (path.charCodeAt(i) === 47 /* / */) inSegment = false;
    else if (!inSegment) {
      inSegment = true;
      count++;
    }
  }
  return count;
}

function decodedSegments(path: string): string[] | undefined {
  const segments = path.split('/').filter(Boolean);
  try {
    for (let i = 0; i < segments.length; i++) if (segments[i]!.includes('%')) segments[i] = decodeURIComponent(segments[i]!);
  } catch {
    return undefined;
  }
  return segments;
}

function matchesSegments(pattern: readonly string[], actual: readonly string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i]!;
    if (expected.charCodeAt(0) !== 58 /* : */ && expected !== actual[i]) return false;
  }
  return true;
}

function paramsOf(pattern: readonly string[], actual: readonly string[]): Record<string, string> {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) if (pattern[i]!.charCodeAt(0) === 58) params[pattern[i]!.slice(1)] = actual[i]!;
  return params;
}

function specificity(segments: readonly string[]): number {
  return segments.reduce((score, segment, i) => score + (segment.startsWith(':') ? 0 : 2 ** (16 - i)), 0);
}

