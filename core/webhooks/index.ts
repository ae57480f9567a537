export * from './envelope.js';
export * from '../../contract/metadata.js';
export * from './retry-schedule.js';
export * from './url.js';
export * from './deliver.js';
export * from './endpoints.js';
