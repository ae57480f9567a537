export { foldName, nameList, splitNames } from './normalise.js';
export { matchKeysFor } from './block.js';
export {
  decideMatch,
  demographicsOfPatient,
  demographicsOfRow,
  isSamePerson,
  type Demographics,
  type MatchCandidate,
  type MatchDecision,
} from './decide.js';
