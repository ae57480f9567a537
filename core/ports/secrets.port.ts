/**
 * Hashing and secret generation for API keys and webhook keys. A port because both need the platform's
 * crypto, which the pure core may not import.
 */
export interface SecretsPort {
  /** SHA-256 of the UTF-8 text, lower-case hex. Deterministic. */
  sha256Hex(text: string): string;
  /** A new high-entropy secret of `bytes` random bytes, base64url without padding. */
  randomToken(bytes: number): string;
  /** Constant-time equality of two strings (false when lengths differ). */
  equal(a: string, b: string): boolean;
}
