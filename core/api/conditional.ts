import type { VersionCondition } from '../entities/patients.js';
import type { ApiRequest } from './types.js';

/**
 * Conditional writes of versioned resources (RFC 9110): the `ETag` a resource is answered with, and the
 * `If-Match` a write may carry to apply only to that version.
 */

/** The `ETag` header of a version: the `eTag` field of the body, quoted as an entity tag. */
export function etagHeader(version: number): Record<string, string> {
  return { etag: `"${version}"` };
}

/**
 * The condition of the request's `If-Match`, or undefined when it has none: `*` (any current version), or
 * the versions its entity tags name. Tags compare strongly, so a weak one (`W/"3"`) never matches; a bare
 * `3` counts as `"3"`, because the published SDK sends the `eTag` field as it is.
 */
export function ifMatchOf(request: Pick<ApiRequest, 'headers'>): VersionCondition | undefined {
  const header = request.headers['if-match'];
  if (header === undefined) return undefined;
  if (header.trim() === '*') return { any: true };
  const versions: string[] = [];
  for (const part of header.split(',')) {
    const tag = part.trim();
    if (tag === '' || tag.startsWith('W/')) continue;
    versions.push(tag.length >= 2 && tag.startsWith('"') && tag.endsWith('"') ? tag.slice(1, -1) : tag);
  }
  return { versions };
}
