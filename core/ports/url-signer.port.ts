/** What a pre-signed URL grants: one method on one path, for one account, until an instant. */
export interface UrlClaim {
  method: 'GET' | 'PUT';
  /** Path only, without query string, e.g. `/medical/v1/patient/bulk/<id>/upload`. */
  path: string;
  accountId: string;
  /** Unix seconds. */
  expiresAt: number;
}

/**
 * Signs and verifies pre-signed URL claims (HMAC-SHA256 with a server secret in the real adapter).
 * Pure functions of the claim and the secret: the same claim always gives the same signature.
 */
export interface UrlSignerPort {
  /** Hex signature of the claim. */
  sign(claim: UrlClaim): string;
  /**
   * `true` only when `signature` is the signature of exactly this claim (constant-time comparison).
   * Does not look at the clock: expiry is the caller's check, so it can say "expired" apart from "forged".
   */
  verify(claim: UrlClaim, signature: string): boolean;
}
