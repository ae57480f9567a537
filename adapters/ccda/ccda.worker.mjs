// Entry of a C-CDA pool thread (pooled.ccda.ts). Plain JavaScript because the thread may start without a
// TypeScript loader. Installed from the package, the converter is built JavaScript beside this file. From
// the sources (vitest runs no loader; the service may run with `--import tsx`), tsImport loads it through
// tsx in a scope of its own, whether or not tsx is registered globally, with the repository's tsconfig
// whatever the current directory (the `carebridge` command runs from anywhere).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const built = new URL('./ccda.task.js', import.meta.url);
const { convertCcdaTask, foldTask, readTask, searchTextTask } = existsSync(fileURLToPath(built))
  ? await import(built.href)
  : await (await import('tsx/esm/api')).tsImport('./ccda.task.ts', {
      parentURL: import.meta.url,
      tsconfig: fileURLToPath(new URL('../../tsconfig.json', import.meta.url)),
    });

/** Piscina calls the default export once per task with the document's text. */
export default function convert(xml) {
  return convertCcdaTask(xml);
}

/** Called by name (`run(xml, { name: 'searchText' })`): the document's search text. */
export function searchText(xml) {
  return searchTextTask(xml);
}

/** Called by name (`run(xml, { name: 'read' })`): the search text and the conversion together. */
export function read(xml) {
  return readTask(xml);
}

/** Called by name (`run(request, { name: 'fold' })`): converted documents folded into a patient's record. */
export function fold(request) {
  return foldTask(request);
}
