// The ES build, not the package's CommonJS main: its default export is the class under Node, tsx and vitest
// alike, where the main's `exports.default` is unwrapped by some loaders and not by others.
import StateMachine from 'ts-fsm/dist/ts-fsm.es5.js';
import type { BulkStatus } from '../domain/types.js';
import { CoreError } from '../errors.js';

export type BulkEvent = 'accept-upload' | 'reject-upload' | 'expire' | 'complete' | 'fail';

/**
 * The bulk request lifecycle (adds processing -> failed for an
 * unrecoverable error). Every other move is refused with INVALID_TRANSITION.
 */
export const BULK_TRANSITIONS: readonly { name: BulkEvent; from: BulkStatus; to: BulkStatus }[] = [
  { name: 'accept-upload', from: 'waiting', to: 'processing' },
  { name: 'reject-upload', from: 'waiting', to: 'failed' },
  { name: 'expire', from: 'waiting', to: 'expired' },
  { name: 'complete', from: 'processing', to: 'completed' },
  { name: 'fail', from: 'processing', to: 'failed' },
];

const BULK_STATES: readonly { name: BulkStatus; data: undefined }[] = [
  { name: 'waiting', data: undefined },
  { name: 'processing', data: undefined },
  { name: 'completed', data: undefined },
  { name: 'failed', data: undefined },
  { name: 'expired', data: undefined },
];

/** The status after `event`, or a CoreError INVALID_TRANSITION naming both. */
export async function nextStatus(status: BulkStatus, event: BulkEvent): Promise<BulkStatus> {
  const machine = new StateMachine<BulkStatus, BulkEvent, undefined>(status, [...BULK_STATES], [...BULK_TRANSITIONS]);
  if (!machine.canDoTransition(event)) {
    throw new CoreError('INVALID_TRANSITION', `A bulk request that is ${status} cannot ${event.replace('-', ' ')}`, {
      details: { status, event },
    });
  }
  await machine.doTransition(event);
  return machine.state;
}
