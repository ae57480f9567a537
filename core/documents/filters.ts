/**
 * The filters of a consolidated data query (`resources`
 * comma-separated and case-sensitive, all when absent; `dateFrom` and `dateTo` as `YYYY-MM-DD`, inclusive).
 */
import type { ConsolidatedFilters } from '../domain/types.js';
import { CoreError } from '../errors.js';
import type { FhirResource } from '../ports/ccda.port.js';

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asDate(value: unknown): string | undefined {
  return typeof value === 'string' && /^\d{4}/.test(value.trim()) ? value.trim() : undefined;
}

/** When a resource happened: one moment (`start` only), or a period whose either end may be open. */
export interface MainTime {
  start?: string | undefined;
  end?: string | undefined;
  period: boolean;
}

function at(value: unknown): MainTime | undefined {
  const date = asDate(value);
  return date ? { start: date, period: false } : undefined;
}

function periodOf(value: unknown): MainTime | undefined {
  if (!isObject(value)) return undefined;
  const start = asDate(value.start);
  const end = asDate(value.end);
  return start || end ? { start, end, period: true } : undefined;
}

/** A condition's onset, ended by its abatement when that is a date. */
function onsetOf(r: Json): MainTime | undefined {
  const onset = at(r.onsetDateTime) ?? periodOf(r.onsetPeriod) ?? at(r.onsetString);
  const abatement = asDate(r.abatementDateTime) ?? periodOf(r.abatementPeriod)?.end;
  return onset && abatement && !onset.end ? { start: onset.start, end: abatement, period: true } : onset;
}

/**
 * Where each resource's main time is, first present wins: the clinical time (effective[x], onset[x],
 * occurrence[x], performed[x]), then when it was written (recordedDate, authoredOn, issued, date), then
 * periods and other type-specific dates.
 */
const TIME_PATHS: ((resource: Json) => MainTime | undefined)[] = [
  (r) => at(r.effectiveDateTime) ?? at(r.effectiveInstant) ?? periodOf(r.effectivePeriod),
  onsetOf,
  (r) => at(r.occurrenceDateTime) ?? periodOf(r.occurrencePeriod) ?? at(r.occurrenceString),
  (r) => at(r.performedDateTime) ?? periodOf(r.performedPeriod),
  (r) => at(r.recordedDate),
  (r) => at(r.authoredOn),
  (r) => at(r.issued),
  (r) => at(r.date),
  (r) => periodOf(r.period),
  (r) => at(r.startDate) ?? at(r.created) ?? at(r.dateAsserted) ?? at(r.dateWritten),
  (r) => (isObject(r.dispenseRequest) ? periodOf(r.dispenseRequest.validityPeriod) : undefined),
];

/** The main time of a resource as written (FHIR dates or dateTimes, possibly partial like `2012`), or undefined. */
export function mainTimeOf(resource: FhirResource): MainTime | undefined {
  for (const path of TIME_PATHS) {
    const time = path(resource);
    if (time) return time;
  }
  return undefined;
}

/**
 * The main date of a resource as written (a FHIR date or dateTime, possibly partial like `2012` or
 * `2012-08`), or undefined when it has none (a Patient, a Practitioner, a Medication...): the start of
 * its main time, or the end of a period that has only an end.
 */
export function mainDateOf(resource: FhirResource): string | undefined {
  const time = mainTimeOf(resource);
  return time?.start ?? time?.end;
}

/** The first and last day a FHIR date or dateTime covers: `2012` covers the year, a dateTime its local day. */
function daysCovered(date: string): [string, string] | undefined {
  const match = /^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?/.exec(date);
  if (!match) return undefined;
  const [, year, month, day] = match;
  if (day) return [`${year}-${month}-${day}`, `${year}-${month}-${day}`];
  if (month) return [`${year}-${month}-01`, `${year}-${month}-31`];
  return [`${year}-01-01`, `${year}-12-31`];
}

const CALENDAR_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function isCalendarDay(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const daysInMonth = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  return day <= daysInMonth;
}

function checkDate(field: 'dateFrom' | 'dateTo', value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  const match = CALENDAR_DATE.exec(value);
  const valid = match !== null && isCalendarDay(Number(match[1]), Number(match[2]), Number(match[3]));
  if (!valid) {
    throw new CoreError('VALIDATION_FAILED', `${field} must be a calendar date written YYYY-MM-DD.`, { details: { field } });
  }
  return value;
}

/** The resource types named in `resources` (comma-separated, case-sensitive, blanks ignored); undefined = all. */
export function resourceTypesOf(resources: string | undefined): Set<string> | undefined {
  const names = (resources ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  return names.length > 0 ? new Set(names) : undefined;
}

/**
 * The resources that pass the filters, in their given order.
 * - `resources`: only the named types (exact, case-sensitive names); absent or blank = every type.
 * - `dateFrom`/`dateTo`: inclusive days; a resource passes when the days its main date covers
 *   (see mainDateOf; a dateTime counts as the day written, `2012` as the whole year) meet the range.
 *   Resources without a main date (Patient, Practitioner, Organization, Medication...) are always kept
 *   by the date filters: they describe the record rather than an event in it.
 * Throws CoreError `VALIDATION_FAILED` when a date is not a real `YYYY-MM-DD` day or dateFrom is after dateTo.
 */
export function filterResources(resources: readonly FhirResource[], filters: ConsolidatedFilters): FhirResource[] {
  const types = resourceTypesOf(filters.resources);
  const from = checkDate('dateFrom', filters.dateFrom);
  const to = checkDate('dateTo', filters.dateTo);
  if (from && to && from > to) {
    throw new CoreError('VALIDATION_FAILED', 'dateFrom must not be after dateTo.', { details: { field: 'dateFrom' } });
  }
  return resources.filter((resource) => {
    if (types && !types.has(resource.resourceType)) return false;
    if (!from && !to) return true;
    const date = mainDateOf(resource);
    const days = date ? daysCovered(date) : undefined;
    if (!days) return true;
    return (!from || days[1] >= from) && (!to || days[0] <= to);
  });
}
