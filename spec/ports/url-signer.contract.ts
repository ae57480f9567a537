import fc from 'fast-check';
import { expect } from 'vitest';
import type { UrlClaim, UrlSignerPort } from '../../core/ports/url-signer.port.js';

type ContractTest = (name: string, fn: () => Promise<void>, timeout?: number) => void;

export interface UrlSignerContractOptions {
  test: ContractTest;
  /** A signer with its own fresh secret on every call: two signers from `make` never share a secret. */
  make: () => UrlSignerPort;
  numRuns?: number;
}

export const claimArbitrary: fc.Arbitrary<UrlClaim> = fc.record({
  method: fc.constantFrom('GET' as const, 'PUT' as const),
  path: fc.oneof(
    fc.uuid().map((id) => `/medical/v1/patient/bulk/${id}/upload`),
    fc.string({ minLength: 1, maxLength: 60 }).map((s) => `/${s}`),
  ),
  accountId: fc.oneof(fc.uuid(), fc.string({ minLength: 1, maxLength: 40 })),
  expiresAt: fc.integer({ min: 0, max: 4_102_444_800 }),
});

type Field = keyof UrlClaim;

/** A claim that differs from `claim` in at least the given fields, by any amount. */
function changed(claim: UrlClaim, fields: readonly Field[]): fc.Arbitrary<UrlClaim> {
  const pick = <K extends Field>(field: K, arb: fc.Arbitrary<UrlClaim[K]>): fc.Arbitrary<UrlClaim[K]> =>
    fields.includes(field) ? arb.filter((value) => value !== claim[field]) : fc.constant(claim[field]);
  return fc.record({
    method: pick('method', fc.constantFrom('GET' as const, 'PUT' as const)),
    path: pick('path', fc.oneof(fc.string({ maxLength: 60 }), fc.constant(`${claim.path}/`), fc.constant(claim.path.toUpperCase()), fc.constant(`${claim.path}?x=1`))),
    accountId: pick('accountId', fc.oneof(fc.string({ maxLength: 40 }), fc.constant(`${claim.accountId} `), fc.constant(claim.accountId.slice(1)))),
    expiresAt: pick('expiresAt', fc.oneof(fc.integer({ min: 0, max: 4_102_444_800 }), fc.constant(claim.expiresAt + 1), fc.constant(claim.expiresAt - 1))),
  });
}

const fieldSets = fc.subarray(['method', 'path', 'accountId', 'expiresAt'] as const, { minLength: 1 });

function tamper(signature: string): fc.Arbitrary<string> {
  return fc.oneof(
    // One character replaced by another hex digit.
    fc.tuple(fc.nat({ max: signature.length - 1 }), fc.constantFrom(...'0123456789abcdef')).filter(([at, digit]) => signature[at] !== digit).map(([at, digit]) => signature.slice(0, at) + digit + signature.slice(at + 1)),
    fc.nat({ max: signature.length - 1 }).map((length) => signature.slice(0, length)),
    fc.string({ minLength: 1, maxLength: 4 }).map((extra) => signature + extra),
    fc.constant(signature.toUpperCase()).filter((upper) => upper !== signature),
    fc.string({ maxLength: 80 }).filter((other) => other !== signature),
  );
}

export function defineUrlSignerContract(options: UrlSignerContractOptions): void {
  const { test, make } = options;
  const numRuns = options.numRuns ?? 200;

  test('a signature is lower-case hex and the same every time for the same claim', async () => {
    const signer = make();
    fc.assert(
      fc.property(claimArbitrary, (claim) => {
        const signature = signer.sign(claim);
        expect(signature).toMatch(/^[0-9a-f]+$/);
        expect(signer.sign({ ...claim })).toBe(signature);
      }),
      { numRuns },
    );
  });

  test('a signed claim verifies', async () => {
    const signer = make();
    fc.assert(
      fc.property(claimArbitrary, (claim) => {
        expect(signer.verify({ ...claim }, signer.sign(claim))).toBe(true);
      }),
      { numRuns },
    );
  });

  test('property: changing any field, or any set of fields, of a signed claim fails verification', async () => {
    const signer = make();
    fc.assert(
      fc.property(
        claimArbitrary.chain((claim) => fieldSets.chain((fields) => changed(claim, fields).map((other) => ({ claim, other })))),
        ({ claim, other }) => {
          expect(signer.verify(other, signer.sign(claim))).toBe(false);
        },
      ),
      { numRuns },
    );
  });

  test('property: a tampered signature fails verification', async () => {
    const signer = make();
    fc.assert(
      fc.property(
        claimArbitrary.chain((claim) => tamper(signer.sign(claim)).map((forged) => ({ claim, forged }))),
        ({ claim, forged }) => {
          expect(signer.verify(claim, forged)).toBe(false);
        },
      ),
      { numRuns },
    );
  });

  test('a signature from a signer with another secret does not verify', async () => {
    const signer = make();
    const other = make();
    fc.assert(
      fc.property(claimArbitrary, (claim) => {
        expect(other.verify(claim, signer.sign(claim))).toBe(false);
      }),
      { numRuns: Math.min(numRuns, 50) },
    );
  });

  test('the signature of one claim does not verify another claim signed by the same signer', async () => {
    const signer = make();
    fc.assert(
      fc.property(claimArbitrary, claimArbitrary, (a, b) => {
        fc.pre(JSON.stringify(a) !== JSON.stringify(b));
        expect(signer.verify(b, signer.sign(a))).toBe(false);
      }),
      { numRuns },
    );
  });
}
