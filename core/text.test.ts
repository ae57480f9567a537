import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { checkJsonBody, MAX_JSON_DEPTH } from './api/input-text.js';
import { bodyTextProblem, identifierTextProblem, needsTextRepair, repairText } from './text.js';

const anyUnit = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)) });

describe('the text rule', () => {
  test('body text may hold tabs and line breaks, identifiers may not; neither may hold NUL or a lone surrogate', () => {
    expect(bodyTextProblem('line\none\ttab\r')).toBeUndefined();
    expect(identifierTextProblem('line\none')).toBeDefined();
    for (const bad of ['\u0000', 'a\u0001', '\u001f', 'x\ud800', '\udc00y']) {
      expect(bodyTextProblem(bad), JSON.stringify(bad)).toBeDefined();
      expect(identifierTextProblem(bad), JSON.stringify(bad)).toBeDefined();
    }
    expect(bodyTextProblem('😀 Ā \u202e')).toBeUndefined();
  });

  test('repairText leaves nothing the rule refuses, keeps what it accepts, and copies rather than changes', () => {
    fc.assert(
      fc.property(anyUnit, (text) => {
        const repaired = repairText({ [text]: [text, { text }] }) as Record<string, [string, { text: string }]>;
        const [key] = Object.keys(repaired);
        expect(bodyTextProblem(key!)).toBeUndefined();
        const [first, nested] = repaired[key!]!;
        for (const value of [first, nested.text]) {
          expect(bodyTextProblem(value as string)).toBeUndefined();
          if (bodyTextProblem(text) === undefined) expect(value).toBe(text);
        }
      }),
    );
  });

  test('needsTextRepair says exactly whether repairText changes anything', () => {
    const text = fc.oneof(anyUnit, fc.string());
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.constant(null), fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(text.filter((key) => key !== '__proto__'), tie('value'), { maxKeys: 3 })),
    })).value;
    fc.assert(
      fc.property(json, (value) => {
        expect(needsTextRepair(value)).toBe(JSON.stringify(repairText(value)) !== JSON.stringify(value));
      }),
    );
  });

  test('checkJsonBody refuses depth past the limit without recursing, and names where the bad text is', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(() => checkJsonBody(deep)).toThrow(/nested deeper than 64/);
    let ok: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH; i++) ok = [ok];
    expect(() => checkJsonBody(ok)).not.toThrow();
    expect(() => checkJsonBody({ content: [{ attachment: { title: 'a\u0000' } }] })).toThrow(/^content\.0\.attachment\.title: must not contain control characters/);
  });
});
