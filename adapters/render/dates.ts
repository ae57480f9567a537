/**
 * FHIR dates written for people, by hand so no locale data or machine timezone can change them:
 * `2024-01-15` is "15 Jan 2024", `2024-01` "Jan 2024", `2024` "2024", a dateTime adds the time of day as
 * written ("15 Jan 2024, 09:30"; its offset is not converted: the clock the source wrote it in). Midnight is
 * no time of day: converters write a day alone as `T00:00:00`. What is not a FHIR date is shown as written.
 */
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const FHIR_DATE = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?)?)?$/;

export function formatDate(value: string): string {
  const match = FHIR_DATE.exec(value.trim());
  if (!match) return value;
  const [, year, month, day, hour, minute] = match;
  if (!month) return year!;
  const name = MONTHS[Number(month) - 1];
  if (!name || (day && (Number(day) < 1 || Number(day) > 31))) return value;
  if (!day) return `${name} ${year}`;
  const date = `${Number(day)} ${name} ${year}`;
  return hour && (hour !== '00' || minute !== '00') ? `${date}, ${hour}:${minute}` : date;
}

/** A period: "from – to", "from <start>" while open, "until <end>" when only the end is known; one date when both ends read the same. */
export function formatPeriod(start: string | undefined, end: string | undefined): string {
  const from = start ? formatDate(start) : '';
  const to = end ? formatDate(end) : '';
  if (from && to) return from === to ? from : `${from} – ${to}`;
  if (from) return `from ${from}`;
  return to ? `until ${to}` : '';
}

/** The moment a rendering was made, in UTC: "15 Jan 2024, 09:30 UTC". */
export function formatInstant(instant: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${instant.getUTCDate()} ${MONTHS[instant.getUTCMonth()]} ${instant.getUTCFullYear()}, ${pad(instant.getUTCHours())}:${pad(instant.getUTCMinutes())} UTC`;
}
