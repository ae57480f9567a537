import type { z } from 'zod';
import type { CoreDeps } from '../deps.js';
import type { Account } from '../domain/types.js';
import type { VersionCondition } from '../entities/patients.js';
import type { ApiRequest, ApiResponse } from './types.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * How a route is authorised: `apiKey` (x-api-key), `signed` (a pre-signed URL alone, for downloads
 * handed out in webhooks), `signedAndApiKey` (the upload PUT carries both), `none`.
 */
export type RouteAuth = 'apiKey' | 'signed' | 'signedAndApiKey' | 'none';

/** The names of a path's `:name` segments: `'/patient/:id/consolidated/:queryId'` -> `'id' | 'queryId'`. */
export type PathParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}` ? Name | PathParamNames<`/${Rest}`> : P extends `${string}:${infer Name}` ? Name : never;

/** A route's path params by name, each present (the router matched every segment). */
export type PathParams<P extends string> = { [Name in PathParamNames<P>]: string };

export interface RouteContext<Q = Record<string, string | undefined>, B = unknown, PP = Record<string, string>> {
  deps: CoreDeps;
  request: ApiRequest;
  params: PP;
  query: Q;
  body: B;
  /** Present for every route whose auth involves an API key. */
  account: Account;
  /** The request's `If-Match`, for a route that declares `ifMatch`; undefined when it sent none. */
  condition: VersionCondition | undefined;
}

export interface RouteDefinition<QS extends z.ZodType = z.ZodType, BS extends z.ZodType = z.ZodType, P extends string = string> {
  method: HttpMethod;
  /** `/medical/v1/patient/:id`; `:name` segments become params, typed by name for the handler. */
  path: P;
  auth: RouteAuth;
  summary: string;
  tag: string;
  deprecated?: boolean;
  query?: QS;
  body?: BS;
  /** Media type of a raw body the route streams (uploads). */
  rawBody?: string;
  /**
   * Largest body the route accepts, in bytes, enforced on the stream by every HTTP translation: a JSON
   * body is buffered up to it, a raw body is streamed and cut off past it. Default `bodyLimitOf`.
   */
  bodyLimitBytes?: number;
  /**
   * The route writes a versioned resource and honours `If-Match` (handed to it as `condition`): a version
   * that is not the current one answers 412 PRECONDITION_FAILED. Documented as a header and a 412 answer.
   */
  ifMatch?: boolean;
  /** The success answer carries the resource's version as its `ETag` header (documented on the answer). */
  etag?: boolean;
  /** Success status and schema, for the OpenAPI document. */
  success?: {
    status: number;
    schema?: z.ZodType;
    mediaType?: string;
    /** Media types the answer may also come as (a file in several formats), documented as text or binary. */
    otherMediaTypes?: readonly string[];
    /** The OpenAPI example of the answer; one made from the schema when absent. */
    example?: unknown;
  };
  handle(context: RouteContext<z.output<QS>, z.output<BS>, string extends P ? Record<string, string> : PathParams<P>>): Promise<ApiResponse>;
}

/** JSON bodies are read whole before parsing: 1 MB keeps one request's memory small. */
export const JSON_BODY_LIMIT_BYTES = 1024 * 1024;
/** Uploads (CSV, documents) are streamed to blob storage: 200 MB, never held in memory. */
export const UPLOAD_BODY_LIMIT_BYTES = 200 * 1024 * 1024;

/** The body limit of a route: its own, else 200 MB for a streamed upload and 1 MB for JSON. */
export function bodyLimitOf(route: Pick<RouteDefinition, 'rawBody' | 'bodyLimitBytes'>): number {
  return route.bodyLimitBytes ?? (route.rawBody ? UPLOAD_BODY_LIMIT_BYTES : JSON_BODY_LIMIT_BYTES);
}

/** Typed helper so each route's handler sees its own parsed query and body types and its path's params. */
export function defineRoute<QS extends z.ZodType = z.ZodType, BS extends z.ZodType = z.ZodType, P extends string = string>(route: RouteDefinition<QS, BS, P>): RouteDefinition {
  return route as unknown as RouteDefinition;
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

