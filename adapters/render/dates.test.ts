import { describe, expect, test } from 'vitest';
import { formatDate, formatInstant, formatPeriod } from './dates.js';

describe('dates for people', () => {
  test('a day, a month, a year; a time of day only when there is one', () => {
    expect(formatDate('2024-01-15')).toBe('15 Jan 2024');
    expect(formatDate('2012-08')).toBe('Aug 2012');
    expect(formatDate('1967')).toBe('1967');
    expect(formatDate('2014-10-01T10:30:26-05:00')).toBe('1 Oct 2014, 10:30');
    expect(formatDate('2012-08-06T23:05:00.123Z')).toBe('6 Aug 2012, 23:05');
    expect(formatDate('2013-08-15T00:00:00Z')).toBe('15 Aug 2013');
  });

  test('the time as written, whatever the timezone of the machine', () => {
    const before = process.env.TZ;
    try {
      for (const zone of ['UTC', 'Pacific/Kiritimati', 'America/Anchorage']) {
        process.env.TZ = zone;
        expect(formatDate('2024-12-31T23:30:00+01:00')).toBe('31 Dec 2024, 23:30');
        expect(formatInstant(new Date('2024-01-15T09:30:00Z'))).toBe('15 Jan 2024, 09:30 UTC');
      }
    } finally {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
    }
  });

  test('what is not a FHIR date is shown as written', () => {
    for (const value of ['yesterday', '2024-13-01', '2024-01-32', '20240115', '']) expect(formatDate(value)).toBe(value);
  });

  test('periods', () => {
    expect(formatPeriod('2011-03-01', '2012-03-01')).toBe('1 Mar 2011 – 1 Mar 2012');
    expect(formatPeriod('2011-03-01', undefined)).toBe('from 1 Mar 2011');
    expect(formatPeriod(undefined, '2012-03-01')).toBe('until 1 Mar 2012');
    expect(formatPeriod('2013-08-15T00:00:00Z', '2013-08-15')).toBe('15 Aug 2013');
    expect(formatPeriod(undefined, undefined)).toBe('');
  });
});
