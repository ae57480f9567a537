/**
 * A deterministic generator of realistic bulk-create files for benchmarks: the same seed always gives the
 * same bytes. Multi-word names with accents, 1-3 addresses, phones, emails, about 2% invalid rows, and a
 * share of rows that are people already in the account (built from the same "population" seed).
 */

const FIRST = ['James', 'Mary', 'José', 'Zoë', 'Anne Marie', 'Li', 'Søren', 'François', 'Aisha', 'Mateo', 'Chloé', 'Noah', 'Émile', 'Olivia', 'Jean Paul', 'Fatima'];
const LAST = ['Smith', 'García', 'Nguyễn', "O'Brien", 'Müller', 'Kowalski', 'Johnson', 'Da Silva', 'Núñez', 'Brown', 'Smith-Jones', 'Lee', 'Østergaard', 'Khan'];
const STREETS = ['Main St', 'Oak Ave', 'Elm St, Apt 4', 'Broadway', 'Calle Mayor', '5th Ave', 'Maple Rd'];
const CITIES: [string, string][] = [['Springfield', 'IL'], ['New York', 'NY'], ['San José', 'CA'], ['Austin', 'TX'], ['Miami', 'FL'], ['Seattle', 'WA'], ['Boston', 'MA']];

export const BENCH_HEADER = [
  'externalId', 'firstName', 'lastName', 'dob', 'gender',
  'addressLine1', 'addressLine2', 'city', 'state', 'zip',
  'addressLine1-2', 'city-2', 'state-2', 'zip-2',
  'addressLine1-3', 'city-3', 'state-3', 'zip-3',
  'phone-1', 'phone-2', 'email-1', 'ssn', 'hieOptOut',
];

/** mulberry32: tiny, fast, good enough for test data. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function quote(cell: string): string {
  return /[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell;
}

export interface Person {
  firstName: string;
  lastName: string;
  dob: string;
  gender: string;
  zip: string;
}

/** The `index`-th person of a population: deterministic, unique enough that collisions are rare. */
export function personOf(populationSeed: number, index: number): Person {
  const random = seededRandom(populationSeed * 1_000_003 + index);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const year = 1930 + Math.floor(random() * 90);
  const month = 1 + Math.floor(random() * 12);
  const day = 1 + Math.floor(random() * 28);
  return {
    firstName: pick(FIRST),
    // The index in the name keeps people of one population distinct, as real populations mostly are.
    lastName: `${pick(LAST)} ${index.toString(36)}`,
    dob: `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`,
    gender: pick(['M', 'F', 'F', 'M', 'O', 'U']),
    zip: String(10000 + Math.floor(random() * 89999)),
  };
}

export interface GenerateOptions {
  rows: number;
  seed: number;
  /** Share of rows (0..1) that are people of `existingPopulation` (already in the account). */
  matchingShare?: number;
  existingPopulation?: { seed: number; size: number };
  invalidShare?: number;
}

/** The CSV text of a file, header first, LF line ends. */
export function generateCsv(options: GenerateOptions): string {
  const random = seededRandom(options.seed);
  const lines: string[] = [BENCH_HEADER.join(',')];
  const invalidShare = options.invalidShare ?? 0.02;
  for (let i = 0; i < options.rows; i++) {
    const matching = options.existingPopulation && random() < (options.matchingShare ?? 0);
    const person = matching ? personOf(options.existingPopulation!.seed, Math.floor(random() * options.existingPopulation!.size)) : personOf(options.seed, i);
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
    const [city, state] = pick(CITIES);
    const addressCount = 1 + Math.floor(random() * 3);
    const cells = [
      `emr-${options.seed}-${i}`,
      person.firstName,
      person.lastName,
      person.dob,
      person.gender,
      `${1 + Math.floor(random() * 9999)} ${pick(STREETS)}`,
      random() < 0.3 ? `Apt ${1 + Math.floor(random() * 40)}` : '',
      city,
      state,
      person.zip,
      ...(addressCount >= 2 ? [`${1 + Math.floor(random() * 999)} ${pick(STREETS)}`, city, state, String(10000 + Math.floor(random() * 89999))] : ['', '', '', '']),
      ...(addressCount >= 3 ? [`${1 + Math.floor(random() * 999)} ${pick(STREETS)}`, city, state, `${10000 + Math.floor(random() * 89999)}-1234`] : ['', '', '', '']),
      `(${200 + Math.floor(random() * 799)}) 555-${String(Math.floor(random() * 10000)).padStart(4, '0')}`,
      random() < 0.3 ? `${200 + Math.floor(random() * 799)}.555.${String(Math.floor(random() * 10000)).padStart(4, '0')}` : '',
      `patient${i}@example.com`,
      random() < 0.5 ? `${String(100 + Math.floor(random() * 800))}-${String(10 + Math.floor(random() * 89))}-${String(1000 + Math.floor(random() * 8999))}` : '',
      random() < 0.05 ? 'true' : '',
    ];
    if (random() < invalidShare) {
      // One realistic mistake: a bad date, a short zip, or a half-filled second address.
      const mistake = Math.floor(random() * 3);
      if (mistake === 0) cells[3] = '02/30/1980';
      else if (mistake === 1) cells[9] = '1234';
      else cells[10] = '9 Side St', (cells[11] = ''), (cells[12] = '');
    }
    lines.push(cells.map(quote).join(','));
  }
  return lines.join('\n') + '\n';
}
