import { createHash } from 'node:crypto';

const UUID_PATTERN = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

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

export function uuidsIn(text: string): Set<string> {
  return new Set(Array.from(text.matchAll(UUID_PATTERN), (match) => match[0].toLowerCase()));
}

/**
 * Replaces every UUID of `json` that is not in `keep` by one derived from `seedPrefix` and the order of
 * first appearance. The converter draws fresh random UUIDs (Math.random) for resources whose C-CDA id is
 * not a UUID; each such UUID names exactly one thing, so a textual replacement is exact and also reaches
 * contained ids (`med-<uuid>`) and local references (`#med-<uuid>`).
 */
export function replaceRandomUuids(json: string, keep: ReadonlySet<string>, seedPrefix: string): string {
  const replacements = new Map<string, string>();
  return json.replace(UUID_PATTERN, (uuid) => {
    const lower = uuid.toLowerCase();
    if (keep.has(lower)) return uuid;
    let replacement = replacements.get(lower);
    if (!replacement) {
      replacement = uuidFromSeed(`${seedPrefix}:generated:${replacements.size}`);
      replacements.set(lower, replacement);
    }
    return replacement;
  });
}
