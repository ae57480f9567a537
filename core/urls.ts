import type { UrlClaim, UrlSignerPort } from './ports/url-signer.port.js';

/**
 * Pre-signed URLs as the core hands them out: `<publicUrl><path>?exp=<unix s>&acct=<accountId>&sig=<hex>`.
 * The method and path are not in the query: they are whatever the request uses, so a URL signed for a
 * PUT on one path proves nothing for a GET or for another path. Pure string work; signing is the port's.
 */

/** The query parameters of a pre-signed URL (a type, not an interface, so it fits any query record). */
export type SignedQuery = {
  /** Expiry, Unix seconds, decimal. */
  exp: string;
  /** Account the URL is signed to. */
  acct: string;
  sig: string;
};

/** A query as hosts hand it over: a plain record (repeated keys as arrays) or URLSearchParams. */
export type QueryLike = Readonly<Record<string, string | readonly string[] | undefined>> | URLSearchParams;

export interface ParsedSignedQuery {
  accountId: string;
  expiresAt: number;
  signature: string;
}

export type SignedRequestCheck =
  | { ok: true; claim: UrlClaim }
  /**
   * `missing`: no signature parameters at all; `forged`: malformed, or the signature does not match this
   * method, path, account and expiry; `expired`: a genuine signature whose time is over.
   */
  | { ok: false; reason: 'missing' | 'forged' | 'expired' };

const EXP_PATTERN = /^\d{1,12}$/;
const SIG_PATTERN = /^[0-9A-Za-z_-]{1,256}$/;
const MAX_ACCOUNT_LENGTH = 200;

export function signedQuery(claim: UrlClaim, signer: UrlSignerPort): SignedQuery {
  return { exp: String(claim.expiresAt), acct: claim.accountId, sig: signer.sign(claim) };
}

/** `publicUrl` (no trailing slash) + the claim's path + the signed query. */
export function signedUrl(publicUrl: string, claim: UrlClaim, signer: UrlSignerPort): string {
  const query = signedQuery(claim, signer);
  const search = (['exp', 'acct', 'sig'] as const).map((name) => `${name}=${encodeURIComponent(query[name])}`).join('&');
  return `${publicUrl.replace(/\/+$/, '')}${claim.path}?${search}`;
}

function single(query: QueryLike, name: string): string | undefined {
  if (isSearchParams(query)) {
    const values = query.getAll(name);
    return values.length === 1 ? values[0] : undefined;
  }
  const value = query[name];
  // A repeated parameter is refused rather than picking one: two readers could pick differently.
  if (typeof value === 'string') return value;
  return undefined;
}

function isSearchParams(query: QueryLike): query is URLSearchParams {
  return typeof (query as URLSearchParams).getAll === 'function';
}

function present(query: QueryLike, name: string): boolean {
  return isSearchParams(query) ? query.has(name) : query[name] !== undefined;
}

/** The signature parameters of a query, or `undefined` when any is absent, repeated or malformed. */
export function parseSignedQuery(query: QueryLike): ParsedSignedQuery | undefined {
  const exp = single(query, 'exp');
  const acct = single(query, 'acct');
  const sig = single(query, 'sig');
  if (exp === undefined || acct === undefined || sig === undefined) return undefined;
  if (!EXP_PATTERN.test(exp) || !SIG_PATTERN.test(sig)) return undefined;
  if (acct.length === 0 || acct.length > MAX_ACCOUNT_LENGTH) return undefined;
  return { accountId: acct, expiresAt: Number(exp), signature: sig };
}

/**
 * Checks a request against its pre-signed query. The signature is checked before the expiry, so
 * `expired` is only ever said of a URL the service really issued. A URL is valid while `now` is before
 * `expiresAt` (the expiry instant itself is already too late).
 */
export function checkSignedRequest(
  request: { method: string; path: string; query: QueryLike },
  signer: UrlSignerPort,
  now: Date,
): SignedRequestCheck {
  if (!present(request.query, 'sig') && !present(request.query, 'exp') && !present(request.query, 'acct')) {
    return { ok: false, reason: 'missing' };
  }
  const parsed = parseSignedQuery(request.query);
  const method = request.method.toUpperCase();
  if (!parsed || (method !== 'GET' && method !== 'PUT')) return { ok: false, reason: 'forged' };
  const claim: UrlClaim = { method, path: request.path, accountId: parsed.accountId, expiresAt: parsed.expiresAt };
  if (!signer.verify(claim, parsed.signature)) return { ok: false, reason: 'forged' };
  if (now.getTime() >= parsed.expiresAt * 1000) return { ok: false, reason: 'expired' };
  return { ok: true, claim };
}
