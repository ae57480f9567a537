/**
 * The narrative of a C-CDA document by element ID: entries point into their section's text with
 * `<reference value="#id"/>` for what they say only there (a free-text sig, an instruction).
 */
import { attributeOf, firstNode, isCcdaNode, listOf, type CcdaNode } from './ccda-nodes.js';

/** Every text of an element and its descendants, in document order, joined by single spaces. */
export function narrativeText(node: unknown): string {
  const parts: string[] = [];
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string' || typeof value === 'number') parts.push(String(value));
    else if (Array.isArray(value)) for (let i = value.length - 1; i >= 0; i--) stack.push(value[i]);
    else if (isCcdaNode(value)) {
      // The parser keeps an element's own text apart from its children: the text is read first, as in a
      // sentence that ends in a marked-up term ("take 1 tablet for <content>joint pain</content>").
      const keys = Object.keys(value).filter((key) => !key.startsWith('@_')).sort((a, b) => (a === '#text' ? -1 : b === '#text' ? 1 : 0));
      for (let i = keys.length - 1; i >= 0; i--) stack.push(value[keys[i]!]);
    }
  }
  return parts.join(' ').replace(/\s+/g, ' ').trim();
}

/** A lookup of the sections' narrative elements by ID, built on its first use. */
export function narrativeIndex(document: CcdaNode): (reference: string) => string | undefined {
  let byId: Map<string, unknown> | undefined;
  return (reference) => {
    if (!byId) {
      byId = new Map();
      const body = isCcdaNode(document.component) ? document.component.structuredBody : undefined;
      const stack: unknown[] = [];
      for (const component of listOf(isCcdaNode(body) ? body.component : undefined)) {
        for (const section of listOf(isCcdaNode(component) ? component.section : undefined)) if (isCcdaNode(section)) stack.push(section.text);
      }
      while (stack.length > 0) {
        const value = stack.pop();
        if (Array.isArray(value)) stack.push(...value);
        else if (isCcdaNode(value)) {
          const id = value['@_ID'];
          if (typeof id === 'string' && !byId.has(id)) byId.set(id, value);
          for (const key in value) if (!key.startsWith('@_')) stack.push(value[key]);
        }
      }
    }
    const node = byId.get(reference.startsWith('#') ? reference.slice(1) : reference);
    return node === undefined ? undefined : narrativeText(node) || undefined;
  };
}

/**
 * What a text or originalText element says: its own text, or the narrative its `<reference value="#id"/>`
 * points to (read through `narrative`); undefined when it says nothing.
 */
export function textOfElement(element: unknown, narrative?: (reference: string) => string | undefined): string | undefined {
  if (typeof element === 'string') return element.trim() || undefined;
  if (!isCcdaNode(element)) return undefined;
  const reference = attributeOf(firstNode(element.reference), 'value');
  const referenced = reference ? narrative?.(reference) : undefined;
  if (referenced) return referenced;
  const { reference: _reference, ...inline } = element;
  return narrativeText(inline) || undefined;
}
