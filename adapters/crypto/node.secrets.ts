import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SecretsPort } from '../../core/ports/secrets.port.js';

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** SecretsPort on node:crypto. */
export class NodeSecrets implements SecretsPort {
  sha256Hex(text: string): string {
    return sha256(text).toString('hex');
  }

  randomToken(bytes: number): string {
    if (!Number.isInteger(bytes) || bytes < 1 || bytes > 1024) {
      throw new RangeError(`NodeSecrets.randomToken: bytes must be an integer in [1, 1024], got ${bytes}`);
    }
    return randomBytes(bytes).toString('base64url');
  }

  /**
   * Compares digests rather than the strings: timingSafeEqual needs equal lengths, and comparing
   * fixed-size digests keeps the time independent of where, or whether, the lengths differ.
   */
  equal(a: string, b: string): boolean {
    return timingSafeEqual(sha256(a), sha256(b)) && a === b;
  }
}
