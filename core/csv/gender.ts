import type { Gender } from '../domain/types.js';

export const GENDER_REQUIRED = 'required (M, F, O or U)';
export const GENDER_INVALID = 'must be M, F, O or U';

/** Gender at birth of a trimmed cell, any case; `undefined` when it is not one of M, F, O, U. */
export function normaliseGender(value: string): Gender | undefined {
  switch (value) {
    case 'M':
    case 'm':
      return 'M';
    case 'F':
    case 'f':
      return 'F';
    case 'O':
    case 'o':
      return 'O';
    case 'U':
    case 'u':
      return 'U';
    default:
      return undefined;
  }
}
