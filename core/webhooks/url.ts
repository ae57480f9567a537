import { CoreError } from '../errors.js';

/** Longest webhook URL accepted: far above any real endpoint, low enough to keep junk out of storage. */
export const WEBHOOK_URL_MAX_LENGTH = 2048;

const IPV4_PATTERN = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseIpv4(text: string): number[] | undefined {
  const match = IPV4_PATTERN.exec(text);
  if (!match) return undefined;
  const octets = match.slice(1, 5).map(Number);
  return octets.every((o) => o <= 255) ? octets : undefined;
}

/** Eight 16-bit groups, or undefined when `text` is not an IPv6 address (an embedded dotted IPv4 tail is allowed). */
function parseIpv6(text: string): number[] | undefined {
  let address = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = address.indexOf('%');
  if (zone >= 0) address = address.slice(0, zone);
  if (!address.includes(':')) return undefined;

  const lastColon = address.lastIndexOf(':');
  const maybeV4 = address.slice(lastColon + 1);
  if (maybeV4.includes('.')) {
    // "::ffff:1.2.3.4": rewrite the dotted tail as its two hex groups, then parse as usual.
    const v4 = parseIpv4(maybeV4);
    if (!v4) return undefined;
    const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
    address = `${address.slice(0, lastColon + 1)}${hex(v4[0]!, v4[1]!)}:${hex(v4[2]!, v4[3]!)}`;
  }

  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const toGroups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups = part.split(':');
    if (groups.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
    return groups.map((g) => parseInt(g, 16));
  };
  const head = toGroups(halves[0]!);
  const rest = halves.length === 2 ? toGroups(halves[1]!) : [];
  if (!head || !rest) return undefined;
  const explicit = head.length + rest.length;
  if (halves.length === 2) {
    if (explicit > 7) return undefined;
    return [...head, ...new Array<number>(8 - explicit).fill(0), ...rest];
  }
  return explicit === 8 ? head : undefined;
}

function ipv4IsNonPublic([a, b]: number[]): boolean {
  return (
    a === 0 || // "this network", including 0.0.0.0
    a === 10 ||
    a === 127 ||
    (a === 100 && b! >= 64 && b! <= 127) || // carrier-grade NAT, private in practice
    (a === 169 && b === 254) ||
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 168) ||
    a! >= 224 // multicast, reserved and broadcast: never a webhook receiver
  );
}

function ipv6IsNonPublic(groups: number[]): boolean {
  const [g0, , , , , g5, g6, g7] = groups as [number, number, number, number, number, number, number, number];
  const firstFiveZero = groups.slice(0, 5).every((g) => g === 0);
  const embeddedV4 = [g6 >> 8, g6 & 0xff, g7 >> 8, g7 & 0xff];
  if (firstFiveZero && g5 === 0xffff) return ipv4IsNonPublic(embeddedV4); // ::ffff:a.b.c.d, IPv4-mapped
  if (firstFiveZero && g5 === 0) {
    if (g6 === 0 && (g7 === 0 || g7 === 1)) return true; // :: and ::1
    return ipv4IsNonPublic(embeddedV4); // ::a.b.c.d, the deprecated IPv4-compatible form
  }
  if (g0 === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return ipv4IsNonPublic(embeddedV4); // NAT64
  return (
    (g0 & 0xfe00) === 0xfc00 || // fc00::/7 unique local
    (g0 & 0xffc0) === 0xfe80 || // fe80::/10 link-local
    (g0 & 0xffc0) === 0xfec0 || // fec0::/10 deprecated site-local
    (g0 & 0xff00) === 0xff00 // multicast
  );
}

/**
 * Whether an IP address (v4 dotted, or v6 with or without brackets) is loopback, private, link-local,
 * unspecified or otherwise not a public unicast address: the SSRF guard of webhook URLs. Used by the URL
 * check here and by the HTTP sender on the addresses a hostname resolves to. `undefined` when `text` is not
 * an IP address at all.
 */
export function isNonPublicAddress(text: string): boolean | undefined {
  const v4 = parseIpv4(text);
  if (v4) return ipv4IsNonPublic(v4);
  const v6 = parseIpv6(text);
  if (v6) return ipv6IsNonPublic(v6);
  return undefined;
}

function isLocalHostname(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

function invalid(message: string): CoreError {
  return new CoreError('WEBHOOK_URL_INVALID', message);
}

/**
 * Checks a webhook URL before it is saved: http(s) only, and unless `allowPrivate`, no literal loopback,
 * private, link-local or unspecified address and no `localhost` name (SSRF). Hostnames that
 * resolve to such addresses are refused by the sender at send time: the core does no DNS.
 * Returns the URL normalised by the WHATWG parser (which also turns `http://2130706433/` into 127.0.0.1,
 * so numeric tricks are caught).
 * @throws CoreError `WEBHOOK_URL_INVALID` saying what is wrong.
 */
export function validateWebhookUrl(input: unknown, options: { allowPrivate: boolean }): string {
  if (typeof input !== 'string' || input.trim() === '') throw invalid('webhookUrl must be a non-empty string');
  if (input.length > WEBHOOK_URL_MAX_LENGTH) throw invalid(`webhookUrl must be at most ${WEBHOOK_URL_MAX_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    throw invalid('webhookUrl is not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalid(`webhookUrl must use http or https, not ${url.protocol.replace(/:$/, '')}`);
  }
  if (url.hostname === '') throw invalid('webhookUrl has no host');
  if (!options.allowPrivate) {
    if (isLocalHostname(url.hostname)) throw invalid('webhookUrl may not point to localhost');
    if (isNonPublicAddress(url.hostname)) {
      throw invalid('webhookUrl may not point to a loopback, private, link-local or unspecified address');
    }
  }
  return url.href;
}
