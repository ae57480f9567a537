export const DOB_FORMAT = 'must be a date as YYYY-MM-DD';
export const DOB_NOT_A_DATE = 'must be a real calendar date as YYYY-MM-DD';
export const DOB_TOO_EARLY = 'must be in 1900 or later';
export const DOB_IN_FUTURE = 'must not be in the future';

const MIN_YEAR = 1900;
const CHAR_0 = 48;
const CHAR_9 = 57;
const CHAR_DASH = 45;

function digitsAt(value: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = value.charCodeAt(i);
    if (c < CHAR_0 || c > CHAR_9) return -1;
    n = n * 10 + (c - CHAR_0);
  }
  return n;
}

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * What is wrong with a trimmed, non-empty date of birth, or `undefined` when it is a real `YYYY-MM-DD`
 * date from 1900 up to `today` (a `YYYY-MM-DD` from the clock, so string order is date order).
 */
export function dobProblem(value: string, today: string): string | undefined {
  if (value.length !== 10 || value.charCodeAt(4) !== CHAR_DASH || value.charCodeAt(7) !== CHAR_DASH) return DOB_FORMAT;
  const year = digitsAt(value, 0, 4);
  const month = digitsAt(value, 5, 7);
  const day = digitsAt(value, 8, 10);
  if (year < 0 || month < 0 || day < 0) return DOB_FORMAT;
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return DOB_NOT_A_DATE;
  if (year < MIN_YEAR) return DOB_TOO_EARLY;
  if (value > today) return DOB_IN_FUTURE;
  return undefined;
}
