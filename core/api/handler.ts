import { ApiKeyCache, authenticate, DEFAULT_API_KEY_CACHE_MS } from '../accounts.js';
import type { CoreDeps } from '../deps.js';
import type { Account } from '../domain/types.js';
import { CoreError, isCoreError } from '../errors.js';
import { verifySignedRequest } from '../signed-urls.js';
import { ifMatchOf } from './conditional.js';
import { checkJsonBody, checkPathParams, checkQuery } from './input-text.js';
import { errorToResponse, parseWith, problemResponse } from './problem.js';
import { FailedAttempts, RateLimiter, type RateLimits } from './rate-limit.js';
import { Router, type RouteDefinition } from './router.js';
import { apiRoutes } from './routes/index.js';
import type { ApiRequest, ApiResponse } from './types.js';

export interface ApiHandlerOptions {
  /**
   * Called with every error that becomes a 500 (bugs, outages, a storage failure), with the request id the
   * problem body carries, so the host can log it at error level and support can find it from the answer.
   */
  onUnexpectedError?: (error: unknown, request: { method: string; path: string; requestId: string }) => void;
  /** Called with the account a request authenticated as (an API key or a signed URL), e.g. for the access log. */
  onAuthenticated?: (account: Account, request: ApiRequest) => void;
  /** Called with the route pattern a request matched (never its ids), e.g. for the access log. */
  onRouted?: (route: string, request: ApiRequest) => void;
  /**
   * How long an API key's account is remembered, ms (default 5 s; 0 looks every key up every time). A key
   * that was replaced works for at most this long in this process.
   */
  apiKeyCacheMs?: number;
  /**
   * Recognises an adapter's error a caller can act on (a full disk: STORAGE_FULL) and says which CoreError
   * it is; anything it does not recognise stays an unexpected error (500).
   */
  classifyError?: (error: unknown) => CoreError | undefined;
  /**
   * Requests per minute per account, by rate class (an endpoint's `rate` in its table entry; see rate-limit.ts);
   * a class at 0 is not limited.
   * Default: no limits (the runtime sets them for the service).
   */
  rateLimits?: RateLimits;
  /**
   * Wrong API keys allowed per client address and minute (see `FailedAttempts`); past them the address is
   * refused with 429 TOO_MANY_FAILED_ATTEMPTS until a token is back. A request with no `remoteAddress` is
   * not counted. Default: not limited (the runtime sets it for the service).
   */
  failedAuthPerMinute?: number;
}

export type ApiHandler = ((request: ApiRequest) => Promise<ApiResponse>) & {
  readonly routes: readonly RouteDefinition[];
  /** The route a request would reach (for access logs: the pattern, never the ids in the path). */
  routeOf(request: Pick<ApiRequest, 'method' | 'path'>): string | undefined;
};

/**
 * The framework-agnostic API: a plain request in, a plain response out, after routing, authentication,
 * validation and the code-to-status mapping. Every host (in-memory, Koa, any node:http or Express app)
 * calls this and nothing else.
 */
export function createApiHandler(deps: CoreDeps, options: ApiHandlerOptions = {}): ApiHandler {
  const router = new Router(apiRoutes);
  const keys = new ApiKeyCache(deps.clock, options.apiKeyCacheMs ?? DEFAULT_API_KEY_CACHE_MS);
  const limiter = options.rateLimits ? new RateLimiter(deps.clock, options.rateLimits) : undefined;
  const failures = options.failedAuthPerMinute ? new FailedAttempts(deps.clock, options.failedAuthPerMinute) : undefined;

  const handle = async (request: ApiRequest): Promise<ApiResponse> => {
    try {
      const match = router.match(request.method, request.path);
      if (match.kind === 'none') throw new CoreError('ROUTE_NOT_FOUND', `No route for ${request.method.toUpperCase()} ${request.path}`);
      if (match.kind === 'wrong-method') {
        const response = problemResponse('METHOD_NOT_ALLOWED', `Use ${match.allowed.join(' or ')} on this path`);
        response.headers.allow = match.allowed.join(', ');
        return response;
      }
      const { route, params } = match;
      options.onRouted?.(route.path, request);
      checkPathParams(params);
      checkQuery(request.query);
      checkJsonBody(request.body);
      const query = flattenQuery(request.query);
      const address = failures && takesApiKey(route) ? request.remoteAddress : undefined;
      const locked = address !== undefined ? failures!.lockedFor(address) : undefined;
      if (locked !== undefined) {
        const response = problemResponse('TOO_MANY_FAILED_ATTEMPTS', `Too many wrong API keys from this address; try again in ${locked} s`);
        response.headers['retry-after'] = String(locked);
        return response;
      }
      const account = await authorise(deps, keys, route, request).catch((error: unknown) => {
        // A missing key is no guess; a wrong one is.
        if (address !== undefined && isCoreError(error) && error.code === 'UNAUTHORIZED' && request.headers['x-api-key']) failures!.fail(address);
        throw error;
      });
      if (account) options.onAuthenticated?.(account, request);
      const wait = account && limiter ? limiter.take(account.id, route.rate ?? 'standard') : undefined;
      if (wait !== undefined) {
        const response = problemResponse('RATE_LIMITED', `Too many requests of this kind for this account; try again in ${wait} s`);
        response.headers['retry-after'] = String(wait);
        return response;
      }
      const parsedQuery = route.query ? parseWith(route.query, query) : query;
      const parsedBody = route.body ? parseWith(route.body, request.body ?? {}) : request.body;
      const condition = route.ifMatch ? ifMatchOf(request) : undefined;
      const response = await route.handle({ deps, request, params, query: parsedQuery, body: parsedBody, account, condition });
      if (route.deprecated) response.headers.deprecation = 'true';
      return response;
    } catch (error) {
      return errorToResponse(
        error,
        (unexpected) => {
          const requestId = requestIdOf(request) ?? deps.ids.next();
          options.onUnexpectedError?.(unexpected, { method: request.method, path: request.path, requestId });
          return requestId;
        },
        options.classifyError,
      );
    }
  };

  return Object.assign(handle, {
    routes: apiRoutes,
    routeOf(request: Pick<ApiRequest, 'method' | 'path'>) {
      const match = router.match(request.method, request.path);
      return match.kind === 'found' ? match.route.path : undefined;
    },
  });
}

function takesApiKey(route: RouteDefinition): boolean {
  return route.auth === 'apiKey' || route.auth === 'signedAndApiKey';
}

async function authorise(deps: CoreDeps, keys: ApiKeyCache, route: RouteDefinition, request: ApiRequest): Promise<Account | undefined> {
  switch (route.auth) {
    case 'none':
      return undefined;
    case 'apiKey':
      return authenticate(deps, request.headers['x-api-key'], keys);
    case 'signed': {
      const accountId = verifySignedRequest(deps, { method: request.method, path: request.path, query: request.query });
      const account = await deps.storage.accounts.get(accountId);
      if (!account) throw new CoreError('SIGNATURE_INVALID', 'The URL signature does not match; use the URL exactly as it was given');
      return account;
    }
    case 'signedAndApiKey': {
      // The key first: a caller without one learns nothing about the URL.
      const account = await authenticate(deps, request.headers['x-api-key'], keys);
      const accountId = verifySignedRequest(deps, { method: request.method, path: request.path, query: request.query }, 'UPLOAD_URL_EXPIRED');
      // The upload URL is pre-signed to the account; another account's key cannot use it.
      if (accountId !== account.id) throw new CoreError('BULK_REQUEST_NOT_FOUND', 'No bulk request with this id in your account');
      return account;
    }
  }
}

/** A caller's own `x-request-id`, when it is a plain token a log line can carry as is. */
function requestIdOf(request: ApiRequest): string | undefined {
  const given = request.headers['x-request-id'];
  return given !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(given) ? given : undefined;
}

/** Repeated query parameters: the first wins, so a value is always one string. */
function flattenQuery(query: ApiRequest['query']): Record<string, string | undefined> {
  const flat: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(query)) {
    flat[name] = typeof value === 'string' ? value : value?.[0];
  }
  return flat;
}
