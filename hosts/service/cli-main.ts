import { runCli } from './cli.js';

// `carebridge ...` (bin/carebridge.js): the operator CLI on this process's arguments and streams.
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  interactive: process.stderr.isTTY === true,
});
