import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';

/**
 * The `/docs` page: the host's own OpenAPI document rendered in the browser by a small script of ours
 * (http/docs-assets), served by the host itself: no CDN (the service runs on closed networks too), and no
 * third-party UI, whose packages came with install-time analytics.
 */

const ASSETS: Record<string, string> = {
  'docs.js': 'text/javascript; charset=utf-8',
  'docs.css': 'text/css; charset=utf-8',
};

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
    const at = escapeHtml(base);
    const html = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>carebridge API</title>
    <link rel="stylesheet" type="text/css" href="${at}/docs/docs.css" />
    <script src="${at}/docs/docs.js" defer></script>
  </head>
  <body>
    <header>
      <h1>carebridge API</h1>
      <p><label for="api-key">API key for “Try it”</label> <input id="api-key" type="password" autocomplete="off" size="40"></p>
    </header>
    <main id="docs" data-openapi="${at}/openapi.json"><p>Loading the API description…</p></main>
  </body>
</html>
`;
    return { contentType: 'text/html; charset=utf-8', body: html };
  }
  const contentType = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!contentType) return undefined;
  return { contentType, body: createReadStream(new URL(`./docs-assets/${name}`, import.meta.url)) };
}
