import { describe, expect, test } from 'vitest';
import type { BulkStatus } from '../domain/types.js';
import { CoreError } from '../errors.js';
import { type BulkEvent, nextStatus } from './machine.js';

const STATUSES: BulkStatus[] = ['waiting', 'processing', 'completed', 'failed', 'expired'];
const EVENTS: BulkEvent[] = ['accept-upload', 'reject-upload', 'expire', 'complete', 'fail'];
/** How a refusal names each event. */
const SAID: Record<BulkEvent, string> = {
  'accept-upload': 'accept upload',
  'reject-upload': 'reject upload',
  expire: 'expire',
  complete: 'complete',
  fail: 'fail',
};
const ALLOWED: Record<string, BulkStatus> = {
  'waiting accept-upload': 'processing',
  'waiting reject-upload': 'failed',
  'waiting expire': 'expired',
  'processing complete': 'completed',
  'processing fail': 'failed',
};

describe('bulk request lifecycle', () => {
  for (const status of STATUSES) {
    for (const event of EVENTS) {
      const to = ALLOWED[`${status} ${event}`];
      if (to) {
        test(`${status} --${event}--> ${to}`, async () => {
          await expect(nextStatus(status, event)).resolves.toBe(to);
        });
      } else {
        test(`${status} refuses ${event} with INVALID_TRANSITION`, async () => {
          const refusal = await nextStatus(status, event).then(
            () => undefined,
            (error: unknown) => error,
          );
          expect(refusal).toBeInstanceOf(CoreError);
          expect(refusal).toMatchObject({
            code: 'INVALID_TRANSITION',
            message: `A bulk request that is ${status} cannot ${SAID[event]}`,
            details: { status, event },
          });
        });
      }
    }
  }
});
