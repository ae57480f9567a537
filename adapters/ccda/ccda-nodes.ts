/**
 * Reading the parsed C-CDA (fast-xml-parser's tree, as @medplum/ccda parses it): attributes sit under
 * `@_name`, an element that may repeat is one node or a list.
 */

export type CcdaNode = Record<string, unknown>;

export const isCcdaNode = (value: unknown): value is CcdaNode => typeof value === 'object' && value !== null && !Array.isArray(value);

/** An element that may repeat, as a list (empty when absent). */
export const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : value === undefined ? [] : [value]);

/** The first element of one that may repeat; undefined when there is none. */
export const firstNode = (value: unknown): CcdaNode | undefined => listOf(value).find(isCcdaNode);

/** An attribute's text; undefined when absent or empty. */
export function attributeOf(node: unknown, name: string): string | undefined {
  const value = isCcdaNode(node) ? node[`@_${name}`] : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Whether the element declares this template. */
export const hasTemplate = (node: CcdaNode, root: string): boolean => listOf(node.templateId).some((template) => attributeOf(template, 'root') === root);

/** An element's text: a string, or the text of an element with attributes; undefined when empty or null-flavored. */
export function textOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() || undefined;
  if (!isCcdaNode(value) || attributeOf(value, 'nullFlavor')) return undefined;
  const text = value['#text'];
  return typeof text === 'string' || typeof text === 'number' ? String(text).trim() || undefined : undefined;
}
