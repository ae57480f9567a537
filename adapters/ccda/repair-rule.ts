/**
 * The shape of a repair of the converter's output (repair.ts, source-repairs.ts): a named rule applied to
 * each resource, which may read the C-CDA element the resource was made of.
 */
import type { FhirResource } from '../../core/ports/ccda.port.js';
import type { CcdaNode } from './ccda-nodes.js';
import { rewriteDates } from './date-slots.js';

/** What a rule may read besides the resource: the C-CDA element it was made of. */
export interface RepairContext {
  /** The C-CDA element (a clinical statement) the resource was made of; undefined when it was not made of one. */
  sourceOf(resource: FhirResource): CcdaNode | undefined;
  /** An element's ids as the document wrote them. */
  idsOf(element: CcdaNode): CcdaNode[];
  /**
   * Leaves the resource out of the converted bundle, with the reason (recorded on the document's
   * Composition; the document keeps the statement). Absent where nothing can be left out.
   */
  leaveOut?(resource: FhirResource, reason: string): void;
  /**
   * Adds a resource the document states but the converter made none of (a device); `key` names it within
   * the document, so the same document always gives it the same id. Returns its id. Absent where nothing
   * can be added.
   */
  add?(key: string, resource: Omit<FhirResource, 'id'>): string;
  /** The text of the narrative element a `<reference value="#id"/>` points to; undefined when there is none. */
  narrative?(reference: string): string | undefined;
}

export interface RepairRule {
  name: string;
  /**
   * Repairs the resource in place; returns whether it changed anything. It may change the resource's type
   * (keeping its id): references to it are then rewritten by repairConvertedResources.
   */
  apply(resource: FhirResource, context?: RepairContext): boolean;
}

/** A rule that only rewrites date-like strings (see date-slots.ts): rules of this kind in a row share one walk. */
export interface DateRepairRule extends RepairRule {
  /** What the rule makes of each date-like string of this resource; undefined when it changes none there. */
  rewriteFor(resource: FhirResource, context?: RepairContext): ((text: string) => string) | undefined;
}

/** A date rule from what it makes of a resource's dates. */
export function dateRule(name: string, rewriteFor: DateRepairRule['rewriteFor']): DateRepairRule {
  return {
    name,
    rewriteFor,
    apply(resource, context) {
      const rewrite = rewriteFor(resource, context);
      return rewrite ? rewriteDates(resource, [rewrite])[0] === true : false;
    },
  };
}

