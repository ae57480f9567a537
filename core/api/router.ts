import type { z } from 'zod';
import type { CoreDeps } from '../deps.js';
import type { Account } from '../domain/types.js';
import type { ApiRequest, ApiResponse } from './types.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * How a route is authorised: `apiKey` (x-api-key), `signed` (a pre-signed URL alone, for downloads
 * handed out in webhooks), `signedAndApiKey` (the upload PUT carries both), `none`.
 */
export type RouteAuth = 'apiKey' | 'signed' | 'signedAndApiKey' | 'none';

export interface RouteContext<Q = Record<string, string | undefined>, B = unknown> {
  deps: CoreDeps;
  request: ApiRequest;
  params: Record<string, string>;
  query: Q;
  body: B;
  /** Present for every route whose auth involves an API key. */
  account: Account;
}

export interface RouteDefinition<QS extends z.ZodType = z.ZodType, BS extends z.ZodType = z.ZodType> {
  method: HttpMethod;
  /** `/medical/v1/patient/:id`; `:name` segments become params. */
  path: string;
  auth: RouteAuth;
  summary: string;
  tag: string;
  deprecated?: boolean;
  query?: QS;
  body?: BS;
  /** Media type of a raw body the route streams (uploads). */
  rawBody?: string;
  /** Success status and schema, for the OpenAPI document. */
  success?: { status: number; schema?: z.ZodType; mediaType?: string };
  handle(context: RouteContext<z.output<QS>, z.output<BS>>): Promise<ApiResponse>;
}

/** Typed helper so each route's handler sees its own parsed query and body types. */
export function defineRoute<QS extends z.ZodType = z.ZodType, BS extends z.ZodType = z.ZodType>(route: RouteDefinition<QS, BS>): RouteDefinition {
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
  private readonly compiled: CompiledRoute[];

  constructor(readonly routes: readonly RouteDefinition[]) {
    this.compiled = routes
      .map((route) => ({ route, segments: route.path.split('/').filter(Boolean) }))
      .sort((a, b) => specificity(b.segments) - specificity(a.segments));
  }

  match(method: string, path: string): RouteMatch {
    const segments = path.split('/').filter(Boolean);
    const allowed: HttpMethod[] = [];
    for (const { route, segments: pattern } of this.compiled) {
      const params = matchSegments(pattern, segments);
      if (!params) continue;
      if (route.method === method.toUpperCase()) return { kind: 'found', route, params };
      allowed.push(route.method);
    }
    return allowed.length > 0 ? { kind: 'wrong-method', allowed } : { kind: 'none' };
  }
}

function specificity(segments: readonly string[]): number {
  return segments.reduce((score, segment, i) => score + (segment.startsWith(':') ? 0 : 2 ** (16 - i)), 0);
}

function matchSegments(pattern: readonly string[], actual: readonly string[]): Record<string, string> | undefined {
  if (pattern.length !== actual.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i]!;
    let value: string;
    try {
      value = decodeURIComponent(actual[i]!);
    } catch {
      return undefined;
    }
    if (expected.startsWith(':')) params[expected.slice(1)] = value;
    else if (expected !== value) return undefined;
  }
  return params;
}
