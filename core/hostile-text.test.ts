import { describe, expect, test } from 'vitest';
import { csvSafeLine, csvSafeLineCells } from './bulk/csv-text.js';
import { normaliseState, normaliseStateSlowly, normaliseZip, normaliseZipSlowly } from './csv/addresses.js';
import { parseHieOptOut } from './csv/consent.js';
import { normaliseEmail, normalisePhone, normalisePhoneSlowly } from './csv/contacts.js';
import { dobProblem } from './csv/dates.js';
import { normaliseGender } from './csv/gender.js';
import { canonicalColumn, headerProblem, layoutHeader } from './csv/header.js';
import { normaliseSsn, normaliseSsnSlowly, normaliseUuid } from './csv/identifiers.js';
import { freeTextProblem } from './csv/limits.js';
import { nameProblem, parseNameField } from './csv/names.js';
import { validateRow } from './csv/validate-row.js';
import { canonicalJson, primaryCode } from './documents/dedupe.js';
import { dispositionFileName, mediaTypeOf, networkFileName, uploadFileName } from './documents/document-reference.js';
import { mainDateOf, resourceTypesOf } from './documents/filters.js';
import { searchTextOf, searchTextOfCcda } from './documents/search-text.js';
import { foldName, foldNameSlowly, nameList, splitNames, splitNamesSlowly } from './matching/normalise.js';
import { bodyTextProblem, identifierTextProblem, repairText } from './text.js';

/*
 * Every function of the core that reads text a customer or a network controls (CSV cells, document text,
 * names of files, narratives), run on inputs shaped to make a backtracking pattern retry from every
 * position. At 200,000 characters such a pattern takes minutes; a scan takes milliseconds. The timeout
 * is far from both: it catches a cost growing with the square of the input, not a slow machine.
 */

const N = 200_000;
const HOSTILE: Record<string, string> = {
  '`<` run': '<'.repeat(N),
  'dots and dashes between letters': `a${'.-'.repeat(N / 2)}a`,
  'dashes then a letter': `${'-'.repeat(N)}x`,
  'spaces then a letter': `${' '.repeat(N)}x`,
  'tabs and commas': '\t,'.repeat(N / 2),
  'combining marks': '\u0301'.repeat(N),
  'accented letters': 'é'.repeat(N),
  '`a@` runs': 'a@'.repeat(N / 2),
  'digits and dots then a letter': `${'1.'.repeat(N / 2)}x`,
  'entity-like runs': '&#x'.repeat(N / 3),
  'unterminated comments': '<!--'.repeat(N / 4),
  'letters then punctuation': `${'a'.repeat(N)}!`,
  'zero-width characters': '\u200b\ufeff'.repeat(N / 2),
};
const GENEROUS = 20_000;

const HEADER = layoutHeader([
  'externalId', 'firstName', 'lastName', 'dob', 'gender', 'addressLine1-1', 'addressLine2-1', 'city-1', 'state-1', 'zip-1',
  'phone-1', 'email-1', 'ssn', 'driversLicenceNo', 'driversLicenceState', 'cohort-1', 'facilityId', 'hieOptOut',
]);

const READERS: Record<string, (text: string) => unknown> = {
  'CSV cells': (text) => [
    normalisePhone(text), normalisePhoneSlowly(text), normaliseEmail(text), normaliseZip(text), normaliseZipSlowly(text),
    normaliseState(text), normaliseStateSlowly(text), normaliseSsn(text), normaliseSsnSlowly(text), normaliseUuid(text),
    parseHieOptOut(text), normaliseGender(text), dobProblem(text, '2025-01-01'), freeTextProblem(text, 'city'),
  ],
  'name cells and matching': (text) => [
    parseNameField(text), nameProblem(text), foldName(text), foldNameSlowly(text), nameList(text), splitNames(text), splitNamesSlowly(text),
  ],
  'a whole row and header': (text) => [
    validateRow(Array.from({ length: HEADER.original.length }, () => text), HEADER, '2025-01-01'),
    canonicalColumn(text),
    headerProblem(layoutHeader([text, text, 'firstName'])),
    csvSafeLineCells(csvSafeLine([text, text])),
  ],
  'document text': (text) => [
    searchTextOfCcda(text),
    searchTextOf({ resourceType: 'Composition', id: 'c', title: text, text: { status: 'generated', div: text } }),
    mainDateOf({ resourceType: 'Observation', id: 'o', effectiveDateTime: text }),
    primaryCode({ coding: [{ system: text, code: text }], text }),
    canonicalJson({ text }),
  ],
  'file names and media types': (text) => [
    networkFileName('p', 'n', text), uploadFileName('p', 'd', text), dispositionFileName(text), mediaTypeOf(text), resourceTypesOf(text),
  ],
  'stored text rules': (text) => [bodyTextProblem(text), identifierTextProblem(text), repairText({ text })],
};

describe('hostile text: time in proportion to the length', () => {
  for (const [reader, read] of Object.entries(READERS)) {
    test(`${reader}`, { timeout: GENEROUS }, () => {
      for (const text of Object.values(HOSTILE)) expect(read(text)).toBeDefined();
    });
  }
});
