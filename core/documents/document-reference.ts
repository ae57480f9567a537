import type { DocumentRecord } from '../domain/types.js';
import type { FhirResource } from '../ports/ccda.port.js';
import { digest } from './digest.js';
import { patientReference } from './patient-resource.js';

/** Media types of a C-CDA document: these are converted to FHIR; anything else is stored and listed only. */
const CCDA_MEDIA_TYPES = new Set(['application/xml', 'text/xml', 'application/hl7-v3+xml', 'application/hl7-cda+xml']);

/**
 * A media type as `type/subtype` of the characters a registered name may hold (letters, digits and
 * `!#$&^_.+-`). Anything else is not a media type: a stored one is sent back as the Content-Type of every
 * download, where a line break or a non-ASCII character would break the answer (or inject a header).
 */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** The media type of a Content-Type value without its parameters, lower case; undefined when there is none or it is not one. */
export function mediaTypeOf(contentType: string | undefined): string | undefined {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  return mediaType && MEDIA_TYPE.test(mediaType) ? mediaType : undefined;
}

/** The Content-Type to answer a download with: the stored media type when it is one, else a neutral one. */
export function downloadContentType(mimeType: string): string {
  return mediaTypeOf(mimeType) ?? 'application/octet-stream';
}

/** A file name as a Content-Disposition parameter may carry it: printable ASCII without quotes or backslashes. */
export function dispositionFileName(fileName: string): string {
  return fileName.replace(/[^\x20-\x7e]|["\\]/g, '_') || 'document';
}

export function isCcdaMediaType(contentType: string | undefined): boolean {
  const mediaType = mediaTypeOf(contentType);
  return mediaType !== undefined && CCDA_MEDIA_TYPES.has(mediaType);
}

export function documentBlobKey(accountId: string, documentId: string): string {
  return `${accountId}/documents/${documentId}`;
}

function isSafeNameCharacter(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 46 || c === 45 || c === 95;
}

function isDashOrDot(c: number): boolean {
  return c === 45 || c === 46;
}

/**
 * What a file name may keep of a name given by a network or a customer: letters, digits, `.`, `-` and `_`,
 * each run of anything else one `-`, no `-` or `.` at either end, the last 80 characters. A scan: the name
 * is the customer's (up to a megabyte of JSON), and the regular expressions this replaced retried from
 * every dash of a long run of `.-`.
 */
function safeName(name: string): string {
  const decomposed = name.normalize('NFKD');
  let kept = '';
  let inRun = false;
  for (let i = 0; i < decomposed.length; i++) {
    const c = decomposed.charCodeAt(i);
    if (isSafeNameCharacter(c)) {
      kept += decomposed[i];
      inRun = false;
    } else if (!inRun) {
      kept += '-';
      inRun = true;
    }
  }
  let start = 0;
  while (start < kept.length && isDashOrDot(kept.charCodeAt(start))) start++;
  let end = kept.length;
  while (end > start && isDashOrDot(kept.charCodeAt(end - 1))) end--;
  const cleaned = kept.slice(Math.max(start, end - 80), end);
  return cleaned || 'document';
}

/**
 * The file name of a document fetched from a network. Unique in the account (the storage port looks
 * documents up by it) and the same every time the same network document is met for the same patient, so
 * a second query, or a retried one, recognises a document it already holds instead of storing it again.
 */
export function networkFileName(patientId: string, networkDocumentId: string, originalName: string): string {
  return `${patientId}_${digest(`${patientId}\u0000${networkDocumentId}`)}_${safeName(originalName)}`;
}

/** The file name of a document a customer uploads: its id keeps it unique. */
export function uploadFileName(patientId: string, documentId: string, originalName: string | undefined): string {
  return `${patientId}_${documentId}_${safeName(originalName ?? 'document')}`;
}

/** Fields of a customer's DocumentReference that we overwrite: identity, subject and the file itself. */
const OURS = new Set(['resourceType', 'id', 'meta', 'subject', 'content', 'status', 'docStatus', 'contained', 'author']);

/**
 * The FHIR DocumentReference we store for a document (with its file present): `subject` is our patient,
 * the one attachment names the file (`title` is the fileName that download-url takes), and the
 * organizations the document came from are contained authors. `given` is the customer's own
 * DocumentReference for an upload; its other fields (type, context, date, description...) are kept.
 */
export function documentReferenceOf(document: DocumentRecord, given?: Record<string, unknown>): FhirResource {
  const kept = Object.fromEntries(Object.entries(given ?? {}).filter(([key]) => !OURS.has(key)));
  const organizations = document.organizationIdentifiers.map((organization, index) => ({
    resourceType: 'Organization',
    id: `org${index + 1}`,
    name: organization.name,
    ...(organization.identifierValues.length > 0 ? { identifier: organization.identifierValues.map((value) => ({ value })) } : {}),
  }));
  const resource: FhirResource = {
    date: document.indexed,
    ...kept,
    resourceType: 'DocumentReference',
    id: document.id,
    ...(organizations.length > 0 ? { contained: organizations, author: organizations.map((o) => ({ reference: `#${o.id}` })) } : {}),
    status: document.status,
    docStatus: 'final',
    type: document.type,
    description: document.description,
    subject: { reference: patientReference(document.patientId) },
    content: [
      {
        attachment: {
          contentType: document.mimeType,
          title: document.fileName,
          size: document.size,
          creation: document.indexed,
        },
      },
    ],
  };
  return resource;
}
