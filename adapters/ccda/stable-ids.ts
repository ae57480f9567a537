import { createHash } from 'node:crypto';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * A UUID-shaped id derived from a seed (version nibble 8, "custom", RFC 9562), so the same document
 * converts to the same ids every time and ids from different documents never collide.
 */
export function uuidFromSeed(seed: string): string {
  const hex = sha256Hex(seed).slice(0, 32).split('');
  hex[12] = '8';
  hex[16] = ((parseInt(hex[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  const h = hex.join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

export function isUuid(text: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(text);
}

/**
 * Where each UUID-shaped run of `text` starts, as a global, case-insensitive match of
 * `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}` finds them (leftmost first, none
 * overlapping), but hopping from hyphen to hyphen: a regular expression without a literal to anchor on
 * tries every position of a document, and every document is scanned this way twice (its XML, and the
 * converter's output). stable-ids.test.ts holds the two equal.
 */
export function uuidStarts(text: string): number[] {
  const starts: number[] = [];
  let from = 0;
  for (let hyphen = text.indexOf('-', 8); hyphen !== -1; hyphen = text.indexOf('-', Math.max(hyphen + 1, from + 8))) {
    const start = hyphen - 8;
    if (start >= from && isUuidAt(text, start)) {
      starts.push(start);
      from = start + 36;
    }
  }
  return starts;
}

/** Hexadecimal digit, either case. */
function isHex(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 97 && code <= 102) || (code >= 65 && code <= 70);
}

function isUuidAt(text: string, start: number): boolean {
  if (start + 36 > text.length) return false;
  for (let i = 0; i < 36; i++) {
    const code = text.charCodeAt(start + i);
    if (i === 8 || i === 13 || i === 18 || i === 23 ? code !== 45 : !isHex(code)) return false;
  }
  return true;
}

export function uuidsIn(text: string): Set<string> {
  return new Set(uuidStarts(text).map((start) => text.slice(start, start + 36).toLowerCase()));
}

/**
 * Replaces every UUID of `json` that is not in `keep` by one derived from `seedPrefix` and the order of
 * first appearance. The converter draws fresh random UUIDs (Math.random) for resources whose C-CDA id is
 * not a UUID; each such UUID names exactly one thing, so a textual replacement is exact and also reaches
 * contained ids (`med-<uuid>`) and local references (`#med-<uuid>`).
 */
export function replaceRandomUuids(json: string, keep: ReadonlySet<string>, seedPrefix: string): string {
  const replacements = new Map<string, string>();
  const parts: string[] = [];
  let copied = 0;
  for (const start of uuidStarts(json)) {
    const lower = json.slice(start, start + 36).toLowerCase();
    if (keep.has(lower)) continue;
    let replacement = replacements.get(lower);
    if (!replacement) {
      replacement = uuidFromSeed(`${seedPrefix}:generated:${replacements.size}`);
      replacements.set(lower, replacement);
    }
    parts.push(json.slice(copied, start), replacement);
    copied = start + 36;
  }
  if (copied === 0) return json;
  parts.push(json.slice(copied));
  return parts.join('');
}
