export * from './types.js';
export { canonicalColumn, headerProblem, layoutHeader, REQUIRED_COLUMNS } from './header.js';
export { formatReason, validateRow } from './validate-row.js';
export { MAX_CELL_LENGTH } from './cells.js';
export { US_STATE_CODES } from './addresses.js';
