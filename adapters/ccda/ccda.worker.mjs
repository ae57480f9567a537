// Entry of a C-CDA pool thread (pooled.ccda.ts). Plain JavaScript because the thread may start without a
// TypeScript loader (vitest runs none; the service may run with `--import tsx`): tsImport loads the
// converter through tsx in a scope of its own, whether or not tsx is registered globally, and with the
// repository's tsconfig whatever the current directory (the `carebridge` command runs from anywhere).
import { fileURLToPath } from 'node:url';
import { tsImport } from 'tsx/esm/api';

const { convertCcdaTask } = await tsImport('./ccda.task.ts', {
  parentURL: import.meta.url,
  tsconfig: fileURLToPath(new URL('../../tsconfig.json', import.meta.url)),
});

/** Piscina calls the default export once per task with the document's text. */
export default function convert(xml) {
  return convertCcdaTask(xml);
}
