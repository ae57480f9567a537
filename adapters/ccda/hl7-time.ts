/**
 * HL7 v3 timestamps (TS: `YYYY[MM[DD[HH[MM[SS[.S+]]]]]][+|-ZZZZ]`) as FHIR dates and dateTimes.
 */

/** Read leniently: what follows the last part it recognises is ignored, as a value that is no date is cut back anyway. */
const TS = /^(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(?:\.(\d+))?([+-]\d{4})?/;

const validMonth = (month: string) => Number(month) >= 1 && Number(month) <= 12;

function validDay(year: string, month: string, day: string): boolean {
  const d = Number(day);
  if (d < 1) return false;
  const leap = (Number(year) % 4 === 0 && Number(year) % 100 !== 0) || Number(year) % 400 === 0;
  return d <= [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][Number(month) - 1]!;
}

/**
 * The FHIR dateTime an HL7 timestamp means, at the precision the source has: `1999` -> `1999`, `199911` ->
 * `1999-11`, `19991105` -> `1999-11-05`, `201209251130-0500` -> `2012-09-25T11:30:00-05:00`. A time without
 * a zone is written in UTC (`Z`), as the converter does. A part that is no date (month 13, day 32) cuts the
 * value back to the precision that is valid. Undefined when the text is no timestamp at all.
 */
export function fhirDateTimeOf(ts: string | undefined): string | undefined {
  const match = ts === undefined ? null : TS.exec(ts.trim());
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second, fraction, zone] = match;
  if (month === undefined || !validMonth(month)) return year;
  if (day === undefined || !validDay(year!, month, day)) return `${year}-${month}`;
  const date = `${year}-${month}-${day}`;
  if (hour === undefined || Number(hour) > 23 || Number(minute ?? '0') > 59 || Number(second ?? '0') > 59) return date;
  const offset = zone === undefined || zone === '+0000' ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  return `${date}T${hour}:${minute ?? '00'}:${second ?? '00'}${fraction ? `.${fraction}` : ''}${offset}`;
}

/** The FHIR date an HL7 timestamp means (its time dropped), at the precision the source has. */
export function fhirDateOf(ts: string | undefined): string | undefined {
  return fhirDateTimeOf(ts)?.slice(0, 10);
}

/**
 * What @medplum/ccda 4.5 writes for an HL7 timestamp (its mapCcdaToFhirDateTime and mapCcdaToFhirDate): a
 * value shorter than a day becomes the first of January (`199911` -> `1999-01-01T00:00:00Z`), so the month
 * is lost and a precision the source does not have is claimed.
 */
export function converterRenderings(ts: string): { dateTime: string; date: string } {
  const year = ts.substring(0, 4);
  const [month, day] = ts.length >= 8 ? [ts.substring(4, 6), ts.substring(6, 8)] : ['01', '01'];
  const [hour, minute] = ts.length >= 12 ? [ts.substring(8, 10), ts.substring(10, 12)] : ['00', '00'];
  const second = ts.length >= 14 ? ts.substring(12, 14) : '00';
  let zone = ts.length > 14 ? ts.substring(14) : 'Z';
  if (zone === '+0000') zone = 'Z';
  return { dateTime: `${year}-${month}-${day}T${hour}:${minute}:${second}${zone}`, date: `${year}-${month}-${day}` };
}
