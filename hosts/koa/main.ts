import { runService } from './run.js';

// `npm start`: the service with settings from the environment, until SIGTERM or SIGINT.
process.exitCode = await runService(process.env);
