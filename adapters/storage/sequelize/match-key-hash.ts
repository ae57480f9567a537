import xxhash from 'xxhash-wasm';

/**
 * The blocking-key index stores a 53-bit hash of (account, key) instead of the key text: an entry is 8 bytes
 * plus the patient id rather than ~110 bytes of account id, key and patient id in two B-trees. Keys are
 * random in dob order, so every insert dirties its own index page; with text entries a 100,000-row import
 * spent ~7 s of the SQLite writer on that index and its commits, with hashes ~1 s (measured on realistic
 * keys, same machine). A lookup hashes the wanted keys and re-checks the patients' own keys, so a
 * collision can only add a candidate that is then dropped, never lose one.
 *
 * Persisted: the algorithm (xxHash64, seed 0, of `accountId NUL key` as UTF-8, top 53 bits) must never
 * change without a migration that rewrites the index.
 */
export type MatchKeyHasher = (accountId: string, matchKey: string) => number;

let loading: Promise<MatchKeyHasher> | undefined;

/** The hasher (its WebAssembly module is instantiated once per process). */
export function loadMatchKeyHasher(): Promise<MatchKeyHasher> {
  loading ??= xxhash().then(({ h64 }) => (accountId: string, matchKey: string) => Number(h64(`${accountId}\u0000${matchKey}`) >> 11n));
  return loading;
}
