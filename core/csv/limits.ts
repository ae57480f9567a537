// One table and one rule on characters for the CSV import and the API alike: the API's (contract/fields/limits.ts).
export { CONTROL_CHARACTER, FIELD_MAX_LENGTH, freeTextProblem, hasControlCharacter, tooLongMessage, type LimitedField } from '../../contract/fields/limits.js';
