import { resolveTunables } from '../../runtime/settings-table.js';
import { settingsFromEnv, startService, type ServiceOptions } from './service.js';

/**
 * Runs the service until SIGTERM or SIGINT, then shuts it down gracefully. Returns the exit code: 0 after a
 * clean stop, 1 when it could not start. Shared by `npm start` and `carebridge serve`.
 */
export async function runService(env: NodeJS.ProcessEnv, overrides: ServiceOptions = {}): Promise<number> {
  // Listening before the start: a signal that arrives while the database opens still means a clean stop.
  const stopRequested = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  let service;
  try {
    const fromEnv = settingsFromEnv(env);
    service = await startService({ ...fromEnv, ...overrides, tunables: resolveTunables(overrides.tunables ?? {}, fromEnv.tunables) });
  } catch (error) {
    process.stderr.write(`carebridge could not start: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  const signal = await stopRequested;
  service.logger.info({ signal }, 'shutting down');
  // A second signal while draining means "now".
  const force = () => process.exit(1);
  process.once('SIGTERM', force);
  process.once('SIGINT', force);
  await service.close();
  return 0;
}
