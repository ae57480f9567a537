// ts-fsm's ES build has no declarations of its own; its class is the one the main entry declares.
declare module 'ts-fsm/dist/ts-fsm.es5.js' {
  const StateMachine: typeof import('ts-fsm').default;
  export default StateMachine;
}
