import fc from 'fast-check';
import { expect } from 'vitest';
import type { Address, Contact, Patient, PersonalIdentifier } from '../../../core/domain/types.js';
import type { StoragePort } from '../../../core/ports/storage.port.js';
import { at, sequence, ACCOUNT_A, ACCOUNT_B, address, ids, patientCount } from './fixtures.js';
import type { StorageContractGroup } from './suite.js';

// ---------------------------------------------------------------------------------------------------------
// Arbitraries for the property tests.

const LETTERS = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéèêëàâäåçñøßœæÉÈÀÇÑØÅÆíóúüÜ'];
/** Printable, no control characters: what a person's name, city or note can hold. */
const printable = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }).filter((s) => !/[\u0000-\u001f\u007f]/.test(s));
const word = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: fc.constantFrom(...LETTERS), minLength: 1, maxLength: 12 }) },
  { weight: 1, arbitrary: printable },
);
const names = fc
  .tuple(fc.array(word, { minLength: 1, maxLength: 3 }), fc.constantFrom(' ', ',', ', '))
  .map(([parts, separator]) => parts.join(separator));
const digits = (length: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: length, maxLength: length });
const isoInstant = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2030, 0, 1) }).map((ms) => new Date(ms).toISOString());
const isoDay = fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2024, 11, 31) }).map((ms) => new Date(ms).toISOString().slice(0, 10));
const state = fc.constantFrom('CA', 'NY', 'TX', 'PR', 'DC', 'WA');

const addressArb: fc.Arbitrary<Address> = fc.record(
  {
    addressLine1: names,
    addressLine2: names,
    city: names,
    state,
    zip: digits(5),
    country: fc.constant('USA'),
  },
  { requiredKeys: ['addressLine1', 'city', 'state', 'zip', 'country'] },
);
const contactArb: fc.Arbitrary<Contact> = fc.record({ phone: digits(10), email: fc.emailAddress() }, { requiredKeys: [] });
const identifierArb: fc.Arbitrary<PersonalIdentifier> = fc.oneof(
  digits(9).map((value) => ({ type: 'ssn' as const, value })),
  fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), state).map(([value, st]) => ({ type: 'driversLicense' as const, value, state: st })),
);
const uuidArb = fc.uuid();

/** Everything of a patient but its identity (id, account, creation time) and the version the storage counts. */
type Demographics = Omit<Patient, 'id' | 'accountId' | 'createdAt' | 'version'>;

const demographicsArb: fc.Arbitrary<Demographics> = fc.record(
  {
    facilityIds: fc.uniqueArray(uuidArb, { minLength: 1, maxLength: 3 }),
    cohortIds: fc.uniqueArray(uuidArb, { maxLength: 3 }),
    externalId: fc.oneof(fc.constantFrom('ext-1', 'ext-2'), printable),
    firstName: names,
    lastName: names,
    dob: isoDay,
    genderAtBirth: fc.constantFrom('M', 'F', 'O', 'U'),
    address: fc.array(addressArb, { minLength: 1, maxLength: 10 }),
    contact: fc.array(contactArb, { maxLength: 10 }),
    personalIdentifiers: fc.array(identifierArb, { maxLength: 2 }),
    hieOptOut: fc.boolean(),
    // A small key space, so generated patients share keys and lookups have something to find.
    matchKeys: fc.array(fc.constantFrom('k1', 'k2', 'k3', 'k4', '1980-01-01|F|müller'), { maxLength: 4 }),
    updatedAt: isoInstant,
  },
  { requiredKeys: ['facilityIds', 'cohortIds', 'firstName', 'lastName', 'dob', 'genderAtBirth', 'address', 'contact', 'personalIdentifiers', 'hieOptOut', 'matchKeys', 'updatedAt'] },
);

/** The organization, facilities, cohorts and patients of an account, patients’ matching look-ups, versions and revisions included, and the property tests of patient records. */
export function entitiesContract({ test, numRuns }: StorageContractGroup): void {
  // ----- organizations

  test('organizations: one per account, scoped, updated whole', async (storage, build) => {
    expect(await storage.organizations.getByAccount(ACCOUNT_A)).toBeUndefined();
    const org = build.organization(ACCOUNT_A);
    await storage.organizations.insert(org);
    expect(await storage.organizations.getByAccount(ACCOUNT_A)).toEqual(org);
    expect(await storage.organizations.getByAccount(ACCOUNT_B)).toBeUndefined();
    await expect(storage.organizations.insert(build.organization(ACCOUNT_A))).rejects.toThrow();

    const renamed = { ...org, name: 'Acme Santé', location: address({ city: 'Montréal' }), updatedAt: at(3) };
    expect(await storage.organizations.update(renamed)).toEqual(renamed);
    expect(await storage.organizations.getByAccount(ACCOUNT_A)).toEqual(renamed);
    expect(await storage.organizations.update({ ...renamed, accountId: ACCOUNT_B, name: 'stolen' })).toBeUndefined();
    expect(await storage.organizations.update(build.organization(ACCOUNT_A))).toBeUndefined();
    expect(await storage.organizations.getByAccount(ACCOUNT_A)).toEqual(renamed);
  });

  // ----- facilities

  test('facilities: insert, get, list oldest first, scoped by account', async (storage, build) => {
    const second = build.facility(ACCOUNT_A, { createdAt: at(2), tin: undefined });
    const first = build.facility(ACCOUNT_A, { createdAt: at(1) });
    const foreign = build.facility(ACCOUNT_B);
    for (const facility of [second, first, foreign]) await storage.facilities.insert(facility);
    expect(await storage.facilities.get(ACCOUNT_A, first.id)).toEqual(first);
    const { tin: _absent, ...withoutTin } = second;
    expect(await storage.facilities.get(ACCOUNT_A, second.id)).toEqual(withoutTin);
    expect(ids(await storage.facilities.list(ACCOUNT_A))).toEqual([first.id, second.id]);
    expect(ids(await storage.facilities.list(ACCOUNT_B))).toEqual([foreign.id]);
    expect(await storage.facilities.get(ACCOUNT_B, first.id)).toBeUndefined();
    expect(await storage.facilities.get(ACCOUNT_A, foreign.id)).toBeUndefined();
    expect(await storage.facilities.list('no-such-account')).toEqual([]);
  });

  test('facilities: update replaces; missing or foreign is undefined and changes nothing', async (storage, build) => {
    const facility = build.facility(ACCOUNT_A);
    await storage.facilities.insert(facility);
    const updated = { ...facility, name: 'Uptown', active: false, address: address({ zip: '02139' }), updatedAt: at(5) };
    expect(await storage.facilities.update(updated)).toEqual(updated);
    expect(await storage.facilities.get(ACCOUNT_A, facility.id)).toEqual(updated);
    expect(await storage.facilities.update({ ...updated, accountId: ACCOUNT_B, name: 'stolen' })).toBeUndefined();
    expect(await storage.facilities.update(build.facility(ACCOUNT_A))).toBeUndefined();
    expect(await storage.facilities.list(ACCOUNT_A)).toEqual([updated]);
  });

  test('facilities: remove is true once, false when missing or foreign', async (storage, build) => {
    const facility = build.facility(ACCOUNT_A);
    await storage.facilities.insert(facility);
    expect(await storage.facilities.remove(ACCOUNT_B, facility.id)).toBe(false);
    expect(await storage.facilities.get(ACCOUNT_A, facility.id)).toEqual(facility);
    expect(await storage.facilities.remove(ACCOUNT_A, facility.id)).toBe(true);
    expect(await storage.facilities.remove(ACCOUNT_A, facility.id)).toBe(false);
    expect(await storage.facilities.get(ACCOUNT_A, facility.id)).toBeUndefined();
  });

  test('facilities: nested values are copies', async (storage, build) => {
    const facility = build.facility(ACCOUNT_A);
    await storage.facilities.insert(facility);
    facility.address.city = 'mutated input';
    const read = await storage.facilities.get(ACCOUNT_A, facility.id);
    read!.address.city = 'mutated output';
    expect((await storage.facilities.get(ACCOUNT_A, facility.id))!.address.city).toBe('São Paulo');
  });

  // ----- cohorts

  test('cohorts: insert, get, list oldest first, update, remove, scoped', async (storage, build) => {
    const later = build.cohort(ACCOUNT_A, { createdAt: at(2), description: undefined });
    const earlier = build.cohort(ACCOUNT_A, { createdAt: at(1) });
    await storage.cohorts.insert(later);
    await storage.cohorts.insert(earlier);
    await storage.cohorts.insert(build.cohort(ACCOUNT_B));
    expect(await storage.cohorts.get(ACCOUNT_A, earlier.id)).toEqual(earlier);
    expect(await storage.cohorts.get(ACCOUNT_B, earlier.id)).toBeUndefined();
    expect(ids(await storage.cohorts.list(ACCOUNT_A))).toEqual([earlier.id, later.id]);
    const renamed = { ...earlier, name: 'Hypertension', description: undefined, updatedAt: at(4) };
    expect(await storage.cohorts.update(renamed)).toEqual(renamed);
    expect(await storage.cohorts.get(ACCOUNT_A, earlier.id)).toEqual(renamed);
    expect(await storage.cohorts.update({ ...renamed, accountId: ACCOUNT_B })).toBeUndefined();
    expect(await storage.cohorts.remove(ACCOUNT_B, earlier.id)).toBe(false);
    expect(await storage.cohorts.remove(ACCOUNT_A, earlier.id)).toBe(true);
    expect(ids(await storage.cohorts.list(ACCOUNT_A))).toEqual([later.id]);
  });

  test('cohorts: existingIds gives the account’s own ids among those asked, once each', async (storage, build) => {
    const mine = build.cohort(ACCOUNT_A);
    const alsoMine = build.cohort(ACCOUNT_A);
    const theirs = build.cohort(ACCOUNT_B);
    for (const cohort of [mine, alsoMine, theirs]) await storage.cohorts.insert(cohort);
    const found = await storage.cohorts.existingIds(ACCOUNT_A, [mine.id, theirs.id, 'missing', mine.id, alsoMine.id]);
    expect([...found].sort()).toEqual([mine.id, alsoMine.id].sort());
    expect(await storage.cohorts.existingIds(ACCOUNT_A, [])).toEqual([]);
  });

  // ----- patients

  test('patients: round-trip with every optional field, and with none', async (storage, build) => {
    const full = build.patient(ACCOUNT_A);
    const { externalId: _absent, ...minimalFields } = build.patient(ACCOUNT_A, {
      address: [address({ addressLine2: undefined })],
      contact: [],
      personalIdentifiers: [],
      cohortIds: [],
      matchKeys: [],
    });
    const minimal: Patient = minimalFields;
    await storage.patients.insert(full);
    await storage.patients.insert(minimal);
    expect(await storage.patients.get(ACCOUNT_A, full.id)).toEqual(full);
    expect(await storage.patients.get(ACCOUNT_A, minimal.id)).toEqual(minimal);
    expect(await storage.patients.get(ACCOUNT_A, 'missing')).toBeUndefined();
    expect(await storage.patients.get(ACCOUNT_B, full.id)).toBeUndefined();
  });

  test('patients: nested values are copies', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A);
    await storage.patients.insert(patient);
    patient.address[0]!.zip = '00000';
    patient.matchKeys.push('injected');
    const read = (await storage.patients.get(ACCOUNT_A, patient.id))!;
    read.contact.pop();
    read.facilityIds.push('injected');
    const again = (await storage.patients.get(ACCOUNT_A, patient.id))!;
    expect(again.address[0]!.zip).toBe('94110');
    expect(again.matchKeys).toEqual(['1980-02-29|M|nunez']);
    expect(again.contact).toHaveLength(2);
    expect(again.facilityIds).toHaveLength(1);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['injected'])).toEqual([]);
  });

  test('patients: inserting an existing id throws and keeps the first', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A);
    await storage.patients.insert(patient);
    await expect(storage.patients.insert({ ...patient, firstName: 'Other', matchKeys: ['other'] })).rejects.toThrow();
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual(patient);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['other'])).toEqual([]);
  });

  test('patients: a failed write’s error shows no PHI where loggers look (message, causes’ messages, enumerable fields)', async (storage, build) => {
    const secret = 'Zébulon-Secretname';
    const patient = build.patient(ACCOUNT_A, { firstName: secret, lastName: secret, matchKeys: [secret] });
    await storage.patients.insert(patient);
    const error = await storage.patients.insertMany([build.patient(ACCOUNT_A), { ...patient }]).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(Error);
    for (const [key, value] of Object.entries(error as object)) expect(`${key}: ${JSON.stringify(value)}`).not.toContain('Secretname');
    for (let current: unknown = error; current instanceof Error; current = current.cause) expect(current.message).not.toContain('Secretname');
  });

  test('patients: insertMany inserts all, keeping each id', async (storage, build) => {
    const batch = Array.from({ length: 25 }, (_, i) => build.patient(ACCOUNT_A, { createdAt: at(i), matchKeys: [`k${i % 3}`] }));
    await storage.patients.insertMany(batch);
    await storage.patients.insertMany([]);
    expect(await storage.patients.list(ACCOUNT_A)).toEqual(batch);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k1']))).toEqual(ids(batch.filter((_, i) => i % 3 === 1)));
  });

  test('patients: insertMany is all or none (an existing id, or one repeated in the batch)', async (storage, build) => {
    const existing = build.patient(ACCOUNT_A, { matchKeys: ['shared'] });
    await storage.patients.insert(existing);
    const fresh = build.patient(ACCOUNT_A, { matchKeys: ['shared', 'fresh'] });
    const alsoFresh = build.patient(ACCOUNT_A, { matchKeys: ['fresh'] });
    await expect(storage.patients.insertMany([fresh, { ...existing, firstName: 'Again' }, alsoFresh])).rejects.toThrow();
    const twice = build.patient(ACCOUNT_A, { matchKeys: ['fresh'] });
    await expect(storage.patients.insertMany([twice, alsoFresh, twice])).rejects.toThrow();
    expect(await storage.patients.get(ACCOUNT_A, fresh.id)).toBeUndefined();
    expect(await storage.patients.get(ACCOUNT_A, alsoFresh.id)).toBeUndefined();
    expect(await storage.patients.get(ACCOUNT_A, twice.id)).toBeUndefined();
    expect(await patientCount(storage, ACCOUNT_A)).toBe(1);
    expect(await storage.patients.get(ACCOUNT_A, existing.id)).toEqual(existing);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['fresh'])).toEqual([]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['shared']))).toEqual([existing.id]);
  });

  test('patients: a large insertMany failing at its end leaves none of its earlier patients', async (storage, build) => {
    const existing = build.patient(ACCOUNT_A);
    await storage.patients.insert(existing);
    const batch = Array.from({ length: 2_499 }, () => build.patient(ACCOUNT_A, { matchKeys: ['large'] }));
    await expect(storage.patients.insertMany([...batch, existing])).rejects.toThrow();
    expect(await patientCount(storage, ACCOUNT_A)).toBe(1);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['large'])).toEqual([]);
  });

  test('patients: findByExternalId gives the account’s matches, oldest first', async (storage, build) => {
    const later = build.patient(ACCOUNT_A, { externalId: 'MRN-1', createdAt: at(9) });
    const earlier = build.patient(ACCOUNT_A, { externalId: 'MRN-1', createdAt: at(3) });
    const other = build.patient(ACCOUNT_A, { externalId: 'MRN-2' });
    const foreign = build.patient(ACCOUNT_B, { externalId: 'MRN-1' });
    await storage.patients.insertMany([later, earlier, other, foreign]);
    expect(ids(await storage.patients.findByExternalId(ACCOUNT_A, 'MRN-1'))).toEqual([earlier.id, later.id]);
    expect(await storage.patients.findByExternalId(ACCOUNT_A, 'MRN-3')).toEqual([]);
    expect(ids(await storage.patients.findByExternalId(ACCOUNT_B, 'MRN-1'))).toEqual([foreign.id]);
  });

  test('patients: findByMatchKeys gives patients sharing a key, each once, oldest first, in the account', async (storage, build) => {
    const both = build.patient(ACCOUNT_A, { matchKeys: ['k1', 'k2', 'k1'], createdAt: at(5) });
    const onlyK2 = build.patient(ACCOUNT_A, { matchKeys: ['k2'], createdAt: at(1) });
    const tieLow = build.patient(ACCOUNT_A, { matchKeys: ['k1'], createdAt: at(7) });
    const tieHigh = build.patient(ACCOUNT_A, { matchKeys: ['k1'], createdAt: at(7) });
    const unrelated = build.patient(ACCOUNT_A, { matchKeys: ['k3'] });
    const foreign = build.patient(ACCOUNT_B, { matchKeys: ['k1', 'k2'] });
    await storage.patients.insertMany([tieHigh, both, unrelated, onlyK2, foreign, tieLow]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k1', 'k2', 'k1']))).toEqual([onlyK2.id, both.id, tieLow.id, tieHigh.id]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k2']))).toEqual([onlyK2.id, both.id]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k9'])).toEqual([]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, [])).toEqual([]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_B, ['k1', 'k3']))).toEqual([foreign.id]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k1'])).toContainEqual(both);
  });

  test('patients: findByMatchKeys takes many keys at once', async (storage, build) => {
    const keys = Array.from({ length: 1_200 }, (_, i) => `key-${i}`);
    const patients = [0, 599, 600, 1_199].map((i, n) => build.patient(ACCOUNT_A, { matchKeys: [keys[i]!], createdAt: at(10 - n) }));
    await storage.patients.insertMany(patients);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, keys))).toEqual(ids([...patients].reverse()));
  });

  test('patients: list orders by id, pages with after and limit, filters by facility and cohort', async (storage, build) => {
    const facility = 'f0000000-0000-7000-8000-0000000000ff';
    const cohort = 'c0000000-0000-7000-8000-0000000000cc';
    const patients = Array.from({ length: 7 }, (_, i) =>
      build.patient(ACCOUNT_A, {
        // Creation order differs from id order: list follows ids.
        createdAt: at(100 - i),
        facilityIds: i % 2 === 0 ? [facility] : ['f-other', facility.toUpperCase()],
        cohortIds: i % 3 === 0 ? [cohort, 'c-other'] : [],
      }),
    );
    await storage.patients.insertMany([...patients].reverse());
    await storage.patients.insert(build.patient(ACCOUNT_B, { facilityIds: [facility] }));
    expect(ids(await storage.patients.list(ACCOUNT_A))).toEqual(ids(patients));
    expect(ids(await storage.patients.list(ACCOUNT_A, { limit: 3 }))).toEqual(ids(patients.slice(0, 3)));
    expect(ids(await storage.patients.list(ACCOUNT_A, { after: patients[2]!.id, limit: 3 }))).toEqual(ids(patients.slice(3, 6)));
    expect(ids(await storage.patients.list(ACCOUNT_A, { after: patients[6]!.id }))).toEqual([]);
    expect(ids(await storage.patients.list(ACCOUNT_A, { facilityId: facility }))).toEqual(ids(patients.filter((_, i) => i % 2 === 0)));
    expect(ids(await storage.patients.list(ACCOUNT_A, { cohortId: cohort }))).toEqual(ids(patients.filter((_, i) => i % 3 === 0)));
    expect(ids(await storage.patients.list(ACCOUNT_A, { facilityId: facility, cohortId: cohort, after: patients[0]!.id }))).toEqual([
      patients[6]!.id,
    ]);
    expect(await storage.patients.list(ACCOUNT_A, { facilityId: 'f-none' })).toEqual([]);
    expect(await patientCount(storage, ACCOUNT_A)).toBe(7);
    expect(await patientCount(storage, ACCOUNT_B)).toBe(1);
  });

  test('patients: search by name (folded, word prefixes), dob, externalId and facility; bounded scan, paged by next', async (storage, build) => {
    const facility = 'f0000000-0000-7000-8000-0000000000ff';
    const people: [string, string, string, string | undefined, string[]][] = [
      ['José María', 'García-López', '1980-02-29', 'emr-1', [facility]],
      ['Ana', 'Núñez', '1975-03-09', 'emr-2', ['f-other']],
      ['JOSE', 'Pérez', '1980-02-29', undefined, [facility]],
      ['Zoë', 'garcia', '1990-01-01', 'emr-1', ['f-other', facility]],
      ['Łukasz', "O'Brien", '1980-02-29', 'emr-5', [facility]],
      ['Anaïs', 'Garçon', '1975-03-09', 'emr-6', [facility]],
    ];
    const patients = people.map(([firstName, lastName, dob, externalId, facilityIds], i) => {
      const { externalId: _omitted, ...base } = build.patient(ACCOUNT_A, { firstName, lastName, dob, facilityIds, createdAt: at(100 - i) });
      return externalId === undefined ? base : { ...base, externalId };
    });
    await storage.patients.insertMany([...patients].reverse());
    await storage.patients.insert(build.patient(ACCOUNT_B, { firstName: 'José', lastName: 'García', dob: '1980-02-29', externalId: 'emr-1' }));
    const all = { limit: 50, scan: 1_000 };
    const found = async (search: Parameters<StoragePort['patients']['search']>[1], window = all) => {
      const page = await storage.patients.search(ACCOUNT_A, search, window);
      expect(page.next, 'a whole scan leaves nothing to resume').toBeUndefined();
      return page.patients.map((patient) => patients.indexOf(patients.find((p) => p.id === patient.id)!));
    };
    // Folded words, each beginning one of the names (a hyphen parts a name, punctuation is dropped).
    expect(await found({ nameTerms: ['garcia'] })).toEqual([0, 3]);
    expect(await found({ nameTerms: ['lopez'] })).toEqual([0]);
    expect(await found({ nameTerms: ['garcialo'] })).toEqual([0]);
    expect(await found({ nameTerms: ['jose', 'gar'] })).toEqual([0]);
    expect(await found({ nameTerms: ['jose'] })).toEqual([0, 2]);
    expect(await found({ nameTerms: ['zoe'] })).toEqual([3]);
    expect(await found({ nameTerms: ['lukasz', 'obr'] })).toEqual([4]);
    expect(await found({ nameTerms: ['ana'] })).toEqual([1, 5]);
    expect(await found({ nameTerms: ['arcia'] }), 'a word begins a name, it does not sit inside one').toEqual([]);
    expect(await found({ dob: '1980-02-29' })).toEqual([0, 2, 4]);
    expect(await found({ externalId: 'emr-1' })).toEqual([0, 3]);
    expect(await found({ nameTerms: ['gar'], dob: '1975-03-09' })).toEqual([5]);
    expect(await found({ dob: '1980-02-29', facilityId: facility, externalId: 'emr-5' })).toEqual([4]);
    expect(await found({ facilityId: 'f-other' })).toEqual([1, 3]);
    expect(await found({ nameTerms: ['nobody'] })).toEqual([]);
    expect((await storage.patients.search('no-such-account', { nameTerms: ['jose'] }, all)).patients).toEqual([]);
    // Whole records come back, as stored.
    expect((await storage.patients.search(ACCOUNT_A, { nameTerms: ['zoe'] }, all)).patients).toEqual([patients[3]]);

    // The limit stops at a match; the scan bound stops after that many examined, matching or not.
    expect(await storage.patients.search(ACCOUNT_A, { nameTerms: ['garcia'] }, { limit: 1, scan: 1_000 })).toEqual({ patients: [patients[0]], next: patients[0]!.id });
    expect(await storage.patients.search(ACCOUNT_A, { nameTerms: ['garcia'] }, { limit: 50, scan: 3 })).toEqual({ patients: [patients[0]], next: patients[2]!.id });
    expect(await storage.patients.search(ACCOUNT_A, { nameTerms: ['nobody'] }, { limit: 50, scan: 2 })).toEqual({ patients: [], next: patients[1]!.id });
    expect(await storage.patients.search(ACCOUNT_A, { nameTerms: ['garcia'] }, { after: patients[2]!.id, limit: 50, scan: 2 })).toEqual({ patients: [patients[3]], next: patients[4]!.id });
    expect(await storage.patients.search(ACCOUNT_A, { nameTerms: ['garcia'] }, { after: patients[2]!.id, limit: 50, scan: 3 }), 'the last patient examined: nothing left').toEqual({ patients: [patients[3]] });
    expect(await storage.patients.search(ACCOUNT_A, { nameTerms: ['ana'] }, { after: patients[1]!.id, limit: 1, scan: 1_000 }), 'the last patient found: nothing left').toEqual({ patients: [patients[5]] });
    // Following next, whatever the bounds, finds every match once, in id order.
    for (const [limit, scan] of [[1, 1], [1, 2], [2, 1], [2, 5], [3, 2]] as const) {
      const seen: string[] = [];
      let after: string | undefined;
      for (let calls = 0; calls < 20; calls++) {
        const page = await storage.patients.search(ACCOUNT_A, { dob: '1980-02-29' }, { ...(after !== undefined ? { after } : {}), limit, scan });
        expect(page.patients.length).toBeLessThanOrEqual(limit);
        seen.push(...page.patients.map((patient) => patient.id));
        after = page.next;
        if (after === undefined) break;
      }
      expect(seen, `limit ${limit}, scan ${scan}`).toEqual([patients[0]!.id, patients[2]!.id, patients[4]!.id]);
    }
  });

  test('patients: update replaces the whole record, blocking keys included', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A, { matchKeys: ['old', 'kept'] });
    await storage.patients.insert(patient);
    const { externalId: _dropped, ...rest } = patient;
    const updated: Patient = { ...rest, firstName: 'Zoë', hieOptOut: true, matchKeys: ['kept', 'new'], address: [address({ zip: '73301' })], updatedAt: at(8) };
    // Stored as given, one version on from the one it was read at.
    expect(await storage.patients.update(updated)).toEqual({ ...updated, version: 2 });
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual({ ...updated, version: 2 });
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['old'])).toEqual([]);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['new']))).toEqual([patient.id]);
    expect(await storage.patients.findByExternalId(ACCOUNT_A, 'ext-1')).toEqual([]);
  });

  test('patients: update of a missing or foreign patient is undefined and changes nothing', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A);
    await storage.patients.insert(patient);
    expect(await storage.patients.update(build.patient(ACCOUNT_A))).toBeUndefined();
    expect(await storage.patients.update({ ...patient, accountId: ACCOUNT_B, matchKeys: ['stolen'] })).toBeUndefined();
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual(patient);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_B, ['stolen'])).toEqual([]);
    expect(await patientCount(storage, ACCOUNT_A)).toBe(1);
  });

  test('patients: updateMany replaces each one', async (storage, build) => {
    const batch = Array.from({ length: 5 }, (_, i) => build.patient(ACCOUNT_A, { matchKeys: [`before-${i}`] }));
    await storage.patients.insertMany(batch);
    const updated = batch.map((patient, i) => ({ ...patient, lastName: `Æsir ${i}`, matchKeys: [`after-${i}`], cohortIds: ['c1'] }));
    expect(await storage.patients.updateMany(updated)).toEqual([]);
    expect(await storage.patients.updateMany([])).toEqual([]);
    const stored = updated.map((patient) => ({ ...patient, version: 2 }));
    expect(await storage.patients.list(ACCOUNT_A)).toEqual(stored);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['before-2'])).toEqual([]);
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['after-2'])).toEqual([stored[2]]);
  });

  test('patients: updateMany is all or none when one is missing or foreign', async (storage, build) => {
    const first = build.patient(ACCOUNT_A);
    const second = build.patient(ACCOUNT_A);
    await storage.patients.insertMany([first, second]);
    const foreign = build.patient(ACCOUNT_B);
    await storage.patients.insert(foreign);
    await expect(storage.patients.updateMany([{ ...first, firstName: 'Changed' }, build.patient(ACCOUNT_A)])).rejects.toThrow();
    await expect(storage.patients.updateMany([{ ...second, firstName: 'Changed' }, { ...foreign, accountId: ACCOUNT_A }])).rejects.toThrow();
    expect(await storage.patients.list(ACCOUNT_A)).toEqual([first, second]);
    expect(await storage.patients.get(ACCOUNT_B, foreign.id)).toEqual(foreign);
  });

  test('patients: remove deletes the patient and its keys; missing or foreign is false', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A, { matchKeys: ['k'] });
    await storage.patients.insert(patient);
    expect(await storage.patients.remove(ACCOUNT_B, patient.id)).toBe(false);
    expect(await storage.patients.remove(ACCOUNT_A, patient.id)).toBe(true);
    expect(await storage.patients.remove(ACCOUNT_A, patient.id)).toBe(false);
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toBeUndefined();
    expect(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k'])).toEqual([]);
    expect(await patientCount(storage, ACCOUNT_A)).toBe(0);
    // The id is free again: nothing of the patient was left behind.
    await storage.patients.insert(patient);
    expect(ids(await storage.patients.findByMatchKeys(ACCOUNT_A, ['k']))).toEqual([patient.id]);
  });

  test('patients: of two writers that read the same version (read A, read B, write A, write B), the second is refused as stale; its retry keeps both changes', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A, { cohortIds: [], hieOptOut: false });
    await storage.patients.insert(patient);
    const readByA = (await storage.patients.get(ACCOUNT_A, patient.id))!;
    const readByB = (await storage.patients.get(ACCOUNT_A, patient.id))!;
    expect(await storage.patients.update({ ...readByA, hieOptOut: true, updatedAt: at(1) })).toEqual({ ...patient, hieOptOut: true, updatedAt: at(1), version: 2 });
    // B's change was made from version 1: writing it would undo A's opt-out.
    expect(await storage.patients.update({ ...readByB, cohortIds: ['c-1'], updatedAt: at(2) })).toBe('stale');
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual({ ...patient, hieOptOut: true, updatedAt: at(1), version: 2 });
    const reread = (await storage.patients.get(ACCOUNT_A, patient.id))!;
    const both = { ...patient, hieOptOut: true, cohortIds: ['c-1'], updatedAt: at(2), version: 3 };
    expect(await storage.patients.update({ ...reread, cohortIds: ['c-1'], updatedAt: at(2) })).toEqual(both);
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual(both);
    // A version from the future is no better than one from the past.
    expect(await storage.patients.update({ ...both, version: 7 })).toBe('stale');
  });

  test('patients: updateMany with one stale patient writes none of them and names it', async (storage, build) => {
    const [first, second, third] = [build.patient(ACCOUNT_A), build.patient(ACCOUNT_A), build.patient(ACCOUNT_A)];
    await storage.patients.insertMany([first!, second!, third!]);
    const changedMeanwhile = await storage.patients.update({ ...second!, hieOptOut: true });
    expect(changedMeanwhile).toMatchObject({ version: 2 });
    const page = [first!, second!, third!].map((patient) => ({ ...patient, cohortIds: ['c-1'] }));
    expect(await storage.patients.updateMany(page)).toEqual([second!.id]);
    expect(await storage.patients.list(ACCOUNT_A)).toEqual([first, changedMeanwhile, third]);
    // Redone from what is stored now, every change lands and the opt-out stays.
    const redone = (await storage.patients.list(ACCOUNT_A)).map((patient) => ({ ...patient, cohortIds: ['c-1'] }));
    expect(await storage.patients.updateMany(redone)).toEqual([]);
    expect((await storage.patients.list(ACCOUNT_A)).map((patient) => [patient.version, patient.cohortIds, patient.hieOptOut])).toEqual([
      [2, ['c-1'], false],
      [3, ['c-1'], true],
      [2, ['c-1'], false],
    ]);
  });

  test('patients: the revision counts the committed transactions that wrote the account’s patients, one each; not rolled-back ones, not other accounts’', async (storage, build) => {
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(0);
    const patient = build.patient(ACCOUNT_A);
    await storage.patients.insert(patient);
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(1);
    await storage.patients.insertMany([build.patient(ACCOUNT_A), build.patient(ACCOUNT_A)]);
    await storage.patients.update({ ...patient, firstName: 'Changed' });
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(3);
    // Several writes in one transaction count once; lockAccount in it returns what it started from.
    await storage.transaction(async (tx) => {
      expect(await tx.patients.lockAccount(ACCOUNT_A)).toBe(3);
      await tx.patients.insert(build.patient(ACCOUNT_A));
      await tx.patients.updateMany([{ ...(await tx.patients.get(ACCOUNT_A, patient.id))!, lastName: 'Other' }]);
      expect(await tx.patients.lockAccount(ACCOUNT_A)).toBe(3);
    });
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(4);
    await expect(
      storage.transaction(async (tx) => {
        await tx.patients.insert(build.patient(ACCOUNT_A));
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(4);
    await storage.patients.insert(build.patient(ACCOUNT_B));
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(4);
    expect(await storage.patients.revision(ACCOUNT_B)).toBe(1);
    // Holding the account without writing counts too: the holder may have looked and decided to write nothing.
    await storage.transaction((tx) => tx.patients.lockAccount(ACCOUNT_A));
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(5);
    await expect(storage.patients.lockAccount(ACCOUNT_A)).rejects.toThrow();
  });

  test('patients: with the account locked, look-up-then-create by many writers at once leaves one patient per person (many trials)', async (storage, build) => {
    for (let trial = 0; trial < 25; trial++) {
      const key = `person-${trial}`;
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, () =>
          storage.transaction(async (tx) => {
            await tx.patients.lockAccount(ACCOUNT_A);
            const [found] = await tx.patients.findByMatchKeys(ACCOUNT_A, [key]);
            if (found) return 'found';
            await tx.patients.insert(build.patient(ACCOUNT_A, { matchKeys: [key] }));
            return 'created';
          }),
        ),
      );
      expect(outcomes.filter((outcome) => outcome === 'created')).toHaveLength(1);
      expect(await storage.patients.findByMatchKeys(ACCOUNT_A, [key])).toHaveLength(1);
    }
  });

  test('patients: an update from outside waits for the transaction holding the account, and is refused when that transaction changed the patient', async (storage, build) => {
    const patient = build.patient(ACCOUNT_A, { hieOptOut: false });
    await storage.patients.insert(patient);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => {
      wrote = resolve;
    });
    const holder = storage.transaction(async (tx) => {
      await tx.patients.update({ ...patient, hieOptOut: true });
      wrote();
      await gate;
    });
    await written;
    // Read before the holder commits (version 1), written while it still holds the account.
    const outside = storage.patients.update({ ...patient, cohortIds: ['c-1'] });
    release();
    await holder;
    expect(await outside).toBe('stale');
    expect(await storage.patients.get(ACCOUNT_A, patient.id)).toEqual({ ...patient, hieOptOut: true, version: 2 });
  });

  test('patients: a revision noted before a look-up tells, once the account is locked, whether anyone wrote its patients since', async (storage, build) => {
    const noted = await storage.patients.revision(ACCOUNT_A);
    expect(await storage.transaction((tx) => tx.patients.lockAccount(ACCOUNT_A))).toBe(noted);
    // The transaction above committed: a reader that noted the revision before it sees it moved.
    await storage.patients.insert(build.patient(ACCOUNT_A));
    const later = await storage.transaction((tx) => tx.patients.lockAccount(ACCOUNT_A));
    expect(later).toBe(noted + 2);
    expect(await storage.patients.revision(ACCOUNT_A)).toBe(noted + 3);
  });

  // ----- properties

  test('property: any valid patient round-trips unchanged', async (storage) => {
    const nextId = sequence();
    await fc.assert(
      fc.asyncProperty(demographicsArb, isoInstant, fc.integer({ min: 1, max: 2 ** 31 - 1 }), async (demographics, createdAt, version) => {
        const accountId = `prop-${nextId()}`;
        const patient: Patient = { ...demographics, id: nextId(), accountId, version, createdAt };
        await storage.patients.insert(patient);
        expect(await storage.patients.get(accountId, patient.id)).toEqual(patient);
        expect(await storage.patients.list(accountId)).toEqual([patient]);
        if (patient.externalId !== undefined) expect(await storage.patients.findByExternalId(accountId, patient.externalId)).toEqual([patient]);
        expect(await storage.patients.findByMatchKeys(accountId, patient.matchKeys)).toEqual(patient.matchKeys.length > 0 ? [patient] : []);
      }),
      { numRuns },
    );
  });

  type Op =
    | { kind: 'insert'; demographics: Demographics[] }
    | { kind: 'update'; picks: number[]; demographics: Demographics[] };
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('insert' as const), demographics: fc.array(demographicsArb, { minLength: 1, maxLength: 3 }) }),
    fc.record({
      kind: fc.constant('update' as const),
      picks: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
      demographics: fc.array(demographicsArb, { minLength: 3, maxLength: 3 }),
    }),
  );

  test('property: any sequence of inserts and updates leaves list and lookups equal to a simple model', async (storage) => {
    const nextId = sequence();
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 8 }), async (ops) => {
        const accountId = `model-${nextId()}`;
        const model = new Map<string, Patient>();
        let tick = 0;
        for (const op of ops) {
          if (op.kind === 'insert') {
            const patients = op.demographics.map((demographics): Patient => ({ ...demographics, id: nextId(), accountId, version: 1, createdAt: at(++tick) }));
            if (patients.length === 1) await storage.patients.insert(patients[0]!);
            else await storage.patients.insertMany(patients);
            for (const patient of patients) model.set(patient.id, patient);
          } else {
            const existing = [...model.values()];
            if (existing.length === 0) continue;
            const targets = [...new Set(op.picks.map((pick) => existing[pick % existing.length]!))];
            const updated = targets.map((target, i): Patient => ({ ...op.demographics[i]!, id: target.id, accountId, version: target.version, createdAt: target.createdAt }));
            const stored = updated.map((patient) => ({ ...patient, version: patient.version + 1 }));
            if (updated.length === 1) expect(await storage.patients.update(updated[0]!)).toEqual(stored[0]);
            else expect(await storage.patients.updateMany(updated)).toEqual([]);
            for (const patient of stored) model.set(patient.id, patient);
          }
        }
        const expected = [...model.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
        expect(await storage.patients.list(accountId)).toEqual(expected);
        const byAge = [...expected].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
        for (const key of new Set(expected.flatMap((patient) => patient.matchKeys))) {
          expect(ids(await storage.patients.findByMatchKeys(accountId, [key]))).toEqual(ids(byAge.filter((p) => p.matchKeys.includes(key))));
        }
        for (const externalId of new Set(expected.flatMap((patient) => (patient.externalId === undefined ? [] : [patient.externalId])))) {
          expect(ids(await storage.patients.findByExternalId(accountId, externalId))).toEqual(ids(byAge.filter((p) => p.externalId === externalId)));
        }
      }),
      { numRuns },
    );
  });
}
