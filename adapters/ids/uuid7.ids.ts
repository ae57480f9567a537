import { v7 } from 'uuid';
import type { IdsPort } from '../../core/ports/ids.port.js';

/**
 * UUID v7 ids. uuid's v7 keeps a per-process sequence (RFC 9562, method 1), so ids generated in the same
 * millisecond, or after the wall clock steps back, still sort in generation order.
 */
export class Uuid7Ids implements IdsPort {
  next(): string {
    return v7();
  }
}
