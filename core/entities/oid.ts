/**
 * An OID for a record, under the `2.25` arc (ITU-T X.667: OIDs formed from a UUID), so it is unique
 * without a registry and derivable from the record's id.
 */
export function oidFromUuid(uuid: string): string {
  const hex = uuid.replace(/-/g, '');
  if (!/^[0-9a-f]{32}$/i.test(hex)) throw new Error('oidFromUuid needs a UUID');
  return `2.25.${BigInt(`0x${hex}`).toString(10)}`;
}
