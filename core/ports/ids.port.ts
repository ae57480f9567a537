/** Identifier generation. */
export interface IdsPort {
  /**
   * A new identifier in UUID text form (lower-case, 8-4-4-4-12 hex), unique for the life of the data and
   * increasing in generation order (UUID v7 in production), so ordering by id is ordering by creation.
   */
  next(): string;
}
