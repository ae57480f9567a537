import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { HmacUrlSigner } from '../../adapters/crypto/hmac.url-signer.js';
import type { UrlClaim } from '../../core/ports/url-signer.port.js';
import { checkSignedRequest, parseSignedQuery, signedQuery, signedUrl } from '../../core/urls.js';
import { claimArbitrary, defineUrlSignerContract } from '../ports/url-signer.contract.js';

describe('HmacUrlSigner', () => {
  defineUrlSignerContract({ test, make: () => new HmacUrlSigner(randomBytes(32).toString('base64url')) });

  test('signs the documented canonical text with HMAC-SHA256 (vector computed with openssl)', () => {
    // printf 'carebridge-url-v1\n["PUT","/medical/v1/patient/bulk/r1/upload","acct-1",1700000600]' \
    //   | openssl dgst -sha256 -hmac 'test-secret-0123456789'
    // Pinned so a refactor cannot silently invalidate URLs already handed out.
    const signer = new HmacUrlSigner('test-secret-0123456789');
    const claim: UrlClaim = { method: 'PUT', path: '/medical/v1/patient/bulk/r1/upload', accountId: 'acct-1', expiresAt: 1_700_000_600 };
    expect(signer.sign(claim)).toBe('58dedae0f3b1be27da1520d2e643c4e89ca80cf010a2d1284975312701204752');
  });

  test('field boundaries cannot be shifted: moving text between path and account changes the signature', () => {
    const signer = new HmacUrlSigner('test-secret-0123456789');
    const a: UrlClaim = { method: 'GET', path: '/a', accountId: 'b', expiresAt: 1 };
    const b: UrlClaim = { method: 'GET', path: '/a","b', accountId: '', expiresAt: 1 };
    expect(signer.verify(b, signer.sign(a))).toBe(false);
  });

  test('refuses a short secret and a non-integer expiry', () => {
    expect(() => new HmacUrlSigner('short')).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
    const signer = new HmacUrlSigner('test-secret-0123456789');
    expect(() => signer.sign({ method: 'GET', path: '/x', accountId: 'a', expiresAt: 1.5 })).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
    expect(signer.verify({ method: 'GET', path: '/x', accountId: 'a', expiresAt: Number.NaN }, 'ab')).toBe(false);
  });
});

describe('core/urls: signed query helpers', () => {
  const signer = new HmacUrlSigner('test-secret-0123456789');
  const claim: UrlClaim = { method: 'PUT', path: '/medical/v1/patient/bulk/r1/upload', accountId: 'acct-1', expiresAt: 1_700_000_600 };
  const beforeExpiry = new Date((claim.expiresAt - 1) * 1000);

  test('property: signedQuery then parseSignedQuery gives back the account, expiry and signature', () => {
    fc.assert(
      fc.property(claimArbitrary, (c) => {
        const query = signedQuery(c, signer);
        expect(parseSignedQuery({ ...query })).toEqual({ accountId: c.accountId, expiresAt: c.expiresAt, signature: signer.sign(c) });
      }),
      { numRuns: 200 },
    );
  });

  test('property: signedUrl survives URL parsing and verifies for its own method and path only', () => {
    fc.assert(
      fc.property(claimArbitrary.filter((c) => /^\/[A-Za-z0-9/_-]*$/.test(c.path)), (c) => {
        const url = new URL(signedUrl('https://api.example.com/', c, signer));
        expect(url.pathname).toBe(c.path);
        const now = new Date((c.expiresAt - 10) * 1000);
        expect(checkSignedRequest({ method: c.method, path: url.pathname, query: url.searchParams }, signer, now)).toEqual({ ok: true, claim: c });
        const otherMethod = c.method === 'GET' ? 'PUT' : 'GET';
        expect(checkSignedRequest({ method: otherMethod, path: url.pathname, query: url.searchParams }, signer, now)).toEqual({ ok: false, reason: 'forged' });
        expect(checkSignedRequest({ method: c.method, path: `${url.pathname}x`, query: url.searchParams }, signer, now)).toEqual({ ok: false, reason: 'forged' });
      }),
      { numRuns: 200 },
    );
  });

  test('a genuine URL is valid until its expiry second, then expired', () => {
    const query = signedQuery(claim, signer);
    const check = (now: Date) => checkSignedRequest({ method: 'PUT', path: claim.path, query }, signer, now);
    expect(check(beforeExpiry).ok).toBe(true);
    expect(check(new Date(claim.expiresAt * 1000 - 1))).toEqual({ ok: true, claim });
    expect(check(new Date(claim.expiresAt * 1000))).toEqual({ ok: false, reason: 'expired' });
    expect(check(new Date(claim.expiresAt * 1000 + 3_600_000))).toEqual({ ok: false, reason: 'expired' });
  });

  test('a forged URL is called forged even after its expiry, so expiry never confirms a guess', () => {
    const query = { ...signedQuery(claim, signer), acct: 'acct-2' };
    expect(checkSignedRequest({ method: 'PUT', path: claim.path, query }, signer, new Date(claim.expiresAt * 1000 + 1))).toEqual({ ok: false, reason: 'forged' });
  });

  test('a later expiry written into the URL is forged', () => {
    const query = { ...signedQuery(claim, signer), exp: String(claim.expiresAt + 3600) };
    expect(checkSignedRequest({ method: 'PUT', path: claim.path, query }, signer, beforeExpiry)).toEqual({ ok: false, reason: 'forged' });
  });

  test('no signature parameters is missing; some, malformed or repeated ones are forged', () => {
    const good = signedQuery(claim, signer);
    const check = (query: Record<string, string | string[] | undefined>) => {
      const result = checkSignedRequest({ method: 'PUT', path: claim.path, query }, signer, beforeExpiry);
      return result.ok ? 'ok' : result.reason;
    };
    expect(check({})).toBe('missing');
    expect(check({ other: 'x' })).toBe('missing');
    expect(check({ exp: good.exp, acct: good.acct })).toBe('forged');
    expect(check({ ...good, exp: '17e8' })).toBe('forged');
    expect(check({ ...good, exp: '-1' })).toBe('forged');
    expect(check({ ...good, acct: '' })).toBe('forged');
    expect(check({ ...good, sig: [good.sig, good.sig] })).toBe('forged');
    expect(check({ ...good, sig: `${good.sig}!` })).toBe('forged');
    expect(check(good)).toBe('ok');
    const repeated = new URLSearchParams(good as unknown as Record<string, string>);
    repeated.append('acct', 'acct-2');
    expect(checkSignedRequest({ method: 'PUT', path: claim.path, query: repeated }, signer, beforeExpiry)).toEqual({ ok: false, reason: 'forged' });
  });

  test('only GET and PUT can be signed requests; the method is matched case-insensitively', () => {
    const query = signedQuery(claim, signer);
    expect(checkSignedRequest({ method: 'put', path: claim.path, query }, signer, beforeExpiry).ok).toBe(true);
    expect(checkSignedRequest({ method: 'POST', path: claim.path, query }, signer, beforeExpiry)).toEqual({ ok: false, reason: 'forged' });
  });
});
