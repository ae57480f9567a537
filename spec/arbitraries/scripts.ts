import fc from 'fast-check';

/**
 * Names in many scripts, modelled as units (a base letter and the marks that are part of it), so two
 * renderings of one model are the same name by construction and two models differing in one unit are
 * different names, without calling the folding code under test.
 *
 * What counts as part of a letter follows the matching rule: a non-spacing mark on a Latin, Greek or
 * Cyrillic letter is an accent (rendered at random, never part of the model); vowel signs, nukta, tone
 * marks, niqqud, harakat and (semi-)voicing marks on letters of other scripts are part of the unit.
 */

export interface ScriptAlphabet {
  name: string;
  bases: readonly string[];
  /**
   * Slots of marks that belong to a unit, each a list of alternatives (at most one mark per slot), in the
   * order they are written. `bases` restricts a slot to some bases.
   */
  slots: readonly { marks: readonly string[]; bases?: readonly string[] }[];
  /** Accents the rendering may add (folded away by the rule): per base, or for every base. */
  accents?: readonly string[];
  accentedBases?: readonly string[];
  /** Whether the script has case, so case transformations change the text. */
  cased: boolean;
}

const chars = (text: string): string[] => [...text];

export const ALPHABETS: readonly ScriptAlphabet[] = [
  {
    name: 'Latin',
    bases: chars('abcdefghijklmnopqrstuvwxyz'),
    slots: [],
    // acute, grave, circumflex, diaeresis, tilde, ring, cedilla, caron
    accents: ['\u0301', '\u0300', '\u0302', '\u0308', '\u0303', '\u030a', '\u0327', '\u030c'],
    cased: true,
  },
  {
    name: 'Greek',
    bases: chars('αβγδεζηθικλμνξοπρστυφχψω'),
    slots: [],
    accents: ['\u0301', '\u0308'],
    accentedBases: chars('αεηιουω'),
    cased: true,
  },
  {
    name: 'Cyrillic',
    // й and ё are и and е with a breve and a diaeresis: accents, folded like Latin ones.
    bases: chars('абвгдежзиклмнопрстуфхцчшщъыьэюя'),
    slots: [],
    accents: ['\u0301', '\u0306', '\u0308'],
    accentedBases: chars('аеиоуыэюя'),
    cased: true,
  },
  {
    name: 'Devanagari',
    bases: chars('कखगघचछजझटठडढतथदधनपफबभमयरलवशषसहअआइईउऊएऐओऔ'),
    slots: [
      // nukta
      { marks: ['\u093c'], bases: chars('कखगजडढफ') },
      // vowel signs ा ि ी ु ू ृ े ै ो ौ, and virama
      { marks: chars('\u093e\u093f\u0940\u0941\u0942\u0943\u0947\u0948\u094b\u094c\u094d'), bases: chars('कखगघचछजझटठडढतथदधनपफबभमयरलवशषसह') },
      // candrabindu, anusvara, visarga
      { marks: ['\u0901', '\u0902', '\u0903'] },
    ],
    cased: false,
  },
  {
    name: 'Bengali',
    bases: chars('কখগঘচছজঝটঠডঢণতথদধনপফবভমযরলশষসহ'),
    // ো and ৌ decompose into two signs (NFD), so NFC and NFD spell them differently.
    slots: [{ marks: chars('\u09be\u09bf\u09c0\u09c1\u09c2\u09c3\u09c7\u09c8\u09cb\u09cc\u09cd') }, { marks: ['\u0981', '\u0982'] }],
    cased: false,
  },
  {
    name: 'Tamil',
    bases: chars('கஙசஞடணதநபமயரலவழளறன'),
    slots: [{ marks: chars('\u0bbe\u0bbf\u0bc0\u0bc1\u0bc2\u0bc6\u0bc7\u0bc8\u0bca\u0bcb\u0bcc\u0bcd') }],
    cased: false,
  },
  {
    name: 'Thai',
    bases: chars('กขคงจฉชซญดตถทธนบปผฝพฟภมยรลวศษสหอฮาเแโใไ'),
    slots: [
      { marks: chars('\u0e31\u0e34\u0e35\u0e36\u0e37\u0e38\u0e39'), bases: chars('กขคงจฉชซญดตถทธนบปผฝพฟภมยรลวศษสหอฮ') },
      // tone marks
      { marks: chars('\u0e48\u0e49\u0e4a\u0e4b'), bases: chars('กขคงจฉชซญดตถทธนบปผฝพฟภมยรลวศษสหอฮ') },
    ],
    cased: false,
  },
  {
    name: 'Hebrew',
    bases: chars('אבגדהוזחטיכלמנסעפצקרשתךםןףץ'),
    slots: [
      // dagesh, written before the vowel here: NFD puts it after (canonical order)
      { marks: ['\u05bc'] },
      // sheva, hataf vowels, hiriq, tsere, segol, patah, qamats, holam, qubuts
      { marks: chars('\u05b0\u05b1\u05b2\u05b3\u05b4\u05b5\u05b6\u05b7\u05b8\u05b9\u05bb') },
      // shin and sin dots
      { marks: ['\u05c1', '\u05c2'], bases: ['ש'] },
    ],
    cased: false,
  },
  {
    name: 'Arabic',
    bases: chars('ابتثجحخدذرزسشصضطظعغفقكلمنهوي'),
    slots: [
      // shadda, written before the vowel here: canonical order puts it after
      { marks: ['\u0651'] },
      // fatha, damma, kasra, tanwin, sukun
      { marks: chars('\u064e\u064f\u0650\u064b\u064c\u064d\u0652') },
    ],
    cased: false,
  },
  {
    name: 'Han and Hangul',
    // Hangul syllables decompose into jamo under NFD.
    bases: chars('王李张刘陈杨黄赵吴周明华国平김이박최정강조윤장임한'),
    slots: [],
    cased: false,
  },
  {
    name: 'Kana',
    bases: chars('かきくけこさしすせそたちつてとはひふへほカキクケコサシスセソタチツテトハヒフヘホ'),
    // voiced and semi-voiced sound marks: が is か with U+3099, a different syllable
    slots: [{ marks: ['\u3099', '\u309a'] }],
    cased: false,
  },
];

/** One unit: a base letter and, per slot of its alphabet, the mark it carries or undefined. */
export interface NameUnit {
  base: string;
  marks: readonly (string | undefined)[];
}

export interface NameModel {
  alphabet: ScriptAlphabet;
  units: readonly NameUnit[];
}

function unitOf(alphabet: ScriptAlphabet): fc.Arbitrary<NameUnit> {
  return fc.constantFrom(...alphabet.bases).chain((base) =>
    fc
      .tuple(
        ...alphabet.slots.map((slot) =>
          slot.bases && !slot.bases.includes(base) ? fc.constant(undefined) : fc.option(fc.constantFrom(...slot.marks), { nil: undefined, freq: 2 }),
        ),
      )
      .map((marks) => ({ base, marks })),
  );
}

function sameUnit(a: NameUnit, b: NameUnit): boolean {
  return a.base === b.base && a.marks.length === b.marks.length && a.marks.every((mark, i) => mark === b.marks[i]);
}

export const nameModel: fc.Arbitrary<NameModel> = fc
  .constantFrom(...ALPHABETS)
  .chain((alphabet) => fc.array(unitOf(alphabet), { minLength: 2, maxLength: 8 }).map((units) => ({ alphabet, units })));

/**
 * A name differing from `model` in one unit: another base, one mark more, less or changed (a vowel sign,
 * a tone mark, a dot), a unit inserted or removed.
 */
export function differentByOneUnit(model: NameModel): fc.Arbitrary<NameModel> {
  const { alphabet, units } = model;
  const replaced = fc
    .tuple(fc.nat(units.length - 1), unitOf(alphabet))
    .filter(([at, unit]) => !sameUnit(units[at]!, unit))
    .map(([at, unit]) => units.map((u, i) => (i === at ? unit : u)));
  const inserted = fc.tuple(fc.nat(units.length), unitOf(alphabet)).map(([at, unit]) => [...units.slice(0, at), unit, ...units.slice(at)]);
  const removed = fc.nat(units.length - 1).map((at) => units.filter((_, i) => i !== at));
  return fc.oneof(replaced, inserted, removed).map((changed) => ({ alphabet, units: changed }));
}

/** Zero-width and other invisible characters a name may pick up when copied around. */
export const INVISIBLES = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad'] as const;

export interface Rendering {
  /** Unicode normalisation applied to the text. */
  form: 'none' | 'NFC' | 'NFD' | 'NFKC' | 'NFKD';
  casing: 'none' | 'upper' | 'lower' | 'mixed';
  fullWidth: boolean;
}

const fullWidth = (text: string) =>
  [...text].map((char) => (char >= '!' && char <= '~' ? String.fromCodePoint(char.codePointAt(0)! - 0x21 + 0xff01) : char)).join('');

/** The text of a model: accents added at random (where the script has them), then transformed. */
export function renderModel(model: NameModel): fc.Arbitrary<{ text: string; rendering: Rendering }> {
  const { alphabet, units } = model;
  const accentsOf = (base: string) => (alphabet.accents && (!alphabet.accentedBases || alphabet.accentedBases.includes(base)) ? alphabet.accents : []);
  return fc
    .record({
      accents: fc.tuple(...units.map((unit) => (accentsOf(unit.base).length > 0 ? fc.subarray([...accentsOf(unit.base)], { maxLength: 2 }) : fc.constant([] as string[])))),
      form: fc.constantFrom('none', 'NFC', 'NFD', 'NFKC', 'NFKD') as fc.Arbitrary<Rendering['form']>,
      casing: fc.constantFrom('none', 'upper', 'lower', 'mixed') as fc.Arbitrary<Rendering['casing']>,
      mixed: fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
      fullWidth: fc.boolean(),
      finalSigma: fc.boolean(),
      invisible: fc.array(fc.tuple(fc.nat(), fc.constantFrom(...INVISIBLES)), { maxLength: 3 }),
    })
    .map(({ accents, form, casing, mixed, fullWidth: wide, finalSigma, invisible }) => {
      let text = units.map((unit, i) => unit.base + accents[i]!.join('') + unit.marks.filter((m) => m !== undefined).join('')).join('');
      // A lower-case sigma ends a word as ς.
      if (finalSigma && text.endsWith('σ')) text = `${text.slice(0, -1)}ς`;
      if (wide) text = fullWidth(text);
      if (casing === 'upper') text = text.toUpperCase();
      if (casing === 'lower') text = text.toLowerCase();
      if (casing === 'mixed') text = [...text].map((char, i) => (mixed[i % mixed.length] ? char.toUpperCase() : char.toLowerCase())).join('');
      if (form !== 'none') text = text.normalize(form);
      const codePoints = [...text];
      for (const [at, char] of invisible) codePoints.splice(at % (codePoints.length + 1), 0, char);
      return { text: codePoints.join(''), rendering: { form, casing, fullWidth: wide } };
    });
}
