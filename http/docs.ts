import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';

/**
 * The `/docs` page: Swagger UI from the installed swagger-ui-dist package, served by the host itself (no
 * CDN: the service runs on closed networks too), pointed at the host's own `/openapi.json`.
 */

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

let assetsDir: string | undefined;

function swaggerUiDir(): string {
  assetsDir ??= dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  return assetsDir;
}

export interface DocsFile {
  contentType: string;
  body: string | Readable;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The file for `/docs` or `/docs/<name>` under `base` (the mount prefix, '' at the root), or `undefined`
 * when the name is not one of ours. Only the listed names are served: nothing of the path reaches the
 * filesystem.
 */
export function docsFile(base: string, name: string): DocsFile | undefined {
  if (name === '') {
    const html = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <title>carebridge API</title>
    <link rel="stylesheet" type="text/css" href="${escapeHtml(base)}/docs/swagger-ui.css" />
    <link rel="icon" type="image/png" href="${escapeHtml(base)}/docs/favicon-32x32.png" sizes="32x32" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${escapeHtml(base)}/docs/swagger-ui-bundle.js" charset="UTF-8"></script>
    <script src="${escapeHtml(base)}/docs/swagger-ui-standalone-preset.js" charset="UTF-8"></script>
    <script src="${escapeHtml(base)}/docs/init.js" charset="UTF-8"></script>
  </body>
</html>
`;
    return { contentType: 'text/html; charset=utf-8', body: html };
  }
  if (name === 'init.js') {
    const script = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(`${base}/openapi.json`)},
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: 'StandaloneLayout',
  });
};
`;
    return { contentType: 'text/javascript; charset=utf-8', body: script };
  }
  const contentType = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!contentType) return undefined;
  return { contentType, body: createReadStream(join(swaggerUiDir(), name)) };
}
