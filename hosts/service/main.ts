import { runService } from './run.js';

// `npm start`: the service with settings from the environment, until SIGTERM or SIGINT.
//
// npm start runs Node with --heap-growing-percent=100: the heap may grow to twice what survived the last
// full collection before the next starts, where V8 lets a fast-allocating process grow up to four times.
// A bulk import's batches live across several young collections, so most of what they allocate is
// promoted and dies old: with V8's default the service peaked at ~470 MB resident over a 100,000-row
// import, with the flag at ~360 MB, at the same speed within this machine's noise (bench/bulk.bench.ts
// starts the service with npm start's arguments). A command-line flag rather than v8.setFlagsFromString,
// which V8 documents as unsafe once the isolate runs.
process.exitCode = await runService(process.env);
