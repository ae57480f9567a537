/** One organization a network reaches, as the public API's network directory lists it. */
export interface NetworkDirectoryEntry {
  name: string;
  /** Unique in the directory. */
  oid: string;
  npi?: string;
  addressLine?: string;
  city?: string;
  /** 2-letter USPS code. */
  state?: string;
  zipCode?: string;
  rootOrganization?: string;
  managingOrgOid?: string;
  /** The network it is reached through. */
  network: string;
  /** Whether it takes messages (no network here delivers any). */
  supportsMessaging: boolean;
  active: boolean;
}
