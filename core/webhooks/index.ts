export * from './envelope.js';
export * from './metadata.js';
export * from './retry-schedule.js';
export * from './url.js';
export * from './deliver.js';
