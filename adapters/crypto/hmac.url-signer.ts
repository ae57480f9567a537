import { createHmac, timingSafeEqual } from 'node:crypto';
import { CoreError } from '../../core/errors.js';
import type { UrlClaim, UrlSignerPort } from '../../core/ports/url-signer.port.js';

const SIGNATURE_HEX = /^[0-9a-f]{64}$/;
const MIN_SECRET_LENGTH = 16;

/**
 * The signed text of a claim. A JSON array keeps the fields apart whatever they contain (a path with a
 * newline or a quote cannot shift bytes into the account field), and the version tag lets the format
 * change later without old signatures verifying under the new meaning.
 */
export function canonicalClaim(claim: UrlClaim): string {
  return `carebridge-url-v1\n${JSON.stringify([claim.method, claim.path, claim.accountId, claim.expiresAt])}`;
}

/** Pre-signed URL claims as hex HMAC-SHA256 with a server secret. */
export class HmacUrlSigner implements UrlSignerPort {
  private readonly key: Buffer;

  constructor(secret: string) {
    if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) {
      throw new CoreError('INTERNAL', `URL signing secret must be at least ${MIN_SECRET_LENGTH} characters`);
    }
    this.key = Buffer.from(secret, 'utf8');
  }

  sign(claim: UrlClaim): string {
    if (!Number.isSafeInteger(claim.expiresAt)) {
      throw new CoreError('INTERNAL', 'URL claim expiresAt must be an integer number of Unix seconds');
    }
    return this.mac(claim).toString('hex');
  }

  verify(claim: UrlClaim, signature: string): boolean {
    // Shape checks first: they reveal nothing about the secret, and timingSafeEqual needs equal lengths.
    if (typeof signature !== 'string' || !SIGNATURE_HEX.test(signature)) return false;
    if (!Number.isSafeInteger(claim.expiresAt)) return false;
    return timingSafeEqual(this.mac(claim), Buffer.from(signature, 'hex'));
  }

  private mac(claim: UrlClaim): Buffer {
    return createHmac('sha256', this.key).update(canonicalClaim(claim), 'utf8').digest();
  }
}
