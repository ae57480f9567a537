import * as tsFsmModule from 'ts-fsm';
import type { BulkStatus } from '../domain/types.js';
import { CoreError } from '../errors.js';

/**
 * The bulk request lifecycle (adds processing -> failed for an
 * unrecoverable error). Every other move is refused with INVALID_TRANSITION.
 */
export type BulkEvent = 'accept-upload' | 'reject-upload' | 'expire' | 'complete' | 'fail';

const TRANSITIONS: readonly { name: BulkEvent; from: BulkStatus; to: BulkStatus }[] = [
  { name: 'accept-upload', from: 'waiting', to: 'processing' },
  { name: 'reject-upload', from: 'waiting', to: 'failed' },
  { name: 'expire', from: 'waiting', to: 'expired' },
  { name: 'complete', from: 'processing', to: 'completed' },
  { name: 'fail', from: 'processing', to: 'failed' },
];

const STATES: readonly BulkStatus[] = ['waiting', 'processing', 'completed', 'failed', 'expired'];

type Machine = {
  state: BulkStatus;
  canDoTransition(name: BulkEvent): boolean;
  doTransition(name: BulkEvent): Promise<Machine>;
};
type MachineClass = new (initial: BulkStatus, states: { name: BulkStatus }[], transitions: typeof TRANSITIONS) => Machine;

// ts-fsm ships CommonJS whose class sits under `.default`; how deep depends on the loader's interop.
function resolveMachineClass(): MachineClass {
  let candidate: unknown = tsFsmModule;
  for (let depth = 0; depth < 3 && typeof candidate !== 'function'; depth++) {
    candidate = (candidate as { default?: unknown }).default;
  }
  if (typeof candidate !== 'function') throw new Error('ts-fsm: state machine class not found');
  return candidate as MachineClass;
}

const StateMachine = resolveMachineClass();

/** Whether `event` is allowed from `status`. */
export function canTransition(status: BulkStatus, event: BulkEvent): boolean {
  return new StateMachine(status, STATES.map((name) => ({ name })), TRANSITIONS).canDoTransition(event);
}

/** The status after `event`, or a CoreError INVALID_TRANSITION naming both. */
export async function nextStatus(status: BulkStatus, event: BulkEvent): Promise<BulkStatus> {
  const machine = new StateMachine(status, STATES.map((name) => ({ name })), TRANSITIONS);
  if (!machine.canDoTransition(event)) {
    throw new CoreError('INVALID_TRANSITION', `A bulk request that is ${status} cannot ${event.replace('-', ' ')}`, {
      details: { status, event },
    });
  }
  await machine.doTransition(event);
  return machine.state;
}

export const BULK_TRANSITIONS = TRANSITIONS;
