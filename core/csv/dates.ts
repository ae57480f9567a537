// The API's date-of-birth rule (a request validates with it too); a missing cell is the CSV's own case.
export { daysInMonth, DOB_FORMAT, DOB_IN_FUTURE, DOB_NOT_A_DATE, DOB_TOO_EARLY, dobProblem } from '../../contract/fields/dates.js';

export const DOB_REQUIRED = 'required (a date as YYYY-MM-DD)';
