import type { CoreDeps } from './deps.js';
import { CoreError } from './errors.js';
import type { UrlClaim } from './ports/url-signer.port.js';
import { checkSignedRequest, signedUrl, type QueryLike } from './urls.js';

/**
 * A pre-signed URL valid `validForMs` from now. The account rides in the URL so a download link works
 * without an API key; the signature covers it, so it cannot be swapped.
 */
export function issueSignedUrl(
  deps: Pick<CoreDeps, 'urlSigner' | 'clock' | 'config'>,
  claim: Omit<UrlClaim, 'expiresAt'>,
  validForMs: number,
): { url: string; expiresAt: Date } {
  const expiresAt = Math.floor((deps.clock.now().getTime() + validForMs) / 1000);
  return { url: signedUrl(deps.config.publicUrl, { ...claim, expiresAt }, deps.urlSigner), expiresAt: new Date(expiresAt * 1000) };
}

/**
 * Checks a pre-signed request and returns the account id it was signed for. Throws SIGNATURE_INVALID for
 * a missing or forged signature (any changed method, path, account or expiry), and `expiredCode` when
 * the signature is genuine but its time has passed.
 */
export function verifySignedRequest(
  deps: Pick<CoreDeps, 'urlSigner' | 'clock'>,
  request: { method: string; path: string; query: QueryLike },
  expiredCode: 'URL_EXPIRED' | 'UPLOAD_URL_EXPIRED' = 'URL_EXPIRED',
): string {
  const check = checkSignedRequest(request, deps.urlSigner, deps.clock.now());
  if (check.ok) return check.claim.accountId;
  if (check.reason === 'expired') throw new CoreError(expiredCode, 'This URL has expired; request a new one');
  throw new CoreError(
    'SIGNATURE_INVALID',
    check.reason === 'missing'
      ? 'This URL is not signed; use the URL exactly as it was given'
      : 'The URL signature does not match; use the URL exactly as it was given',
  );
}
