import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';

/**
 * The `/console` pages: a browser console over the public API (imports, patients and their records,
 * webhooks, settings), written as plain ES modules with a small view layer of ours (http/console-assets)
 * and served by the host itself, like `/docs`: no build step, no CDN, no third-party code in the page.
 * The page only calls the API with the key a person types in, so it sees exactly what that key sees.
 */

/** The assets by name: only these are served, so nothing of the request path reaches the filesystem. */
export const CONSOLE_ASSETS: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'ui.js': 'text/javascript; charset=utf-8',
  'api.js': 'text/javascript; charset=utf-8',
  'imports.js': 'text/javascript; charset=utf-8',
  'patients.js': 'text/javascript; charset=utf-8',
  'record.js': 'text/javascript; charset=utf-8',
  'webhooks.js': 'text/javascript; charset=utf-8',
  'settings.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
};

/**
 * Scripts and styles from the host only; documents read in the console are framed from the host's own
 * signed URLs. The key sits in sessionStorage, so no script of anyone else's may run beside it.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export interface ConsoleFile {
  contentType: string;
  headers: Record<string, string>;
  body: string | Readable;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The file for `/console` or `/console/<name>` under `base` (the mount prefix, '' at the root), or
 * `undefined` when the name is not one of ours.
 */
export function consoleFile(base: string, name: string): ConsoleFile | undefined {
  if (name === '') {
    const at = escapeHtml(base);
    // Every module announced at once, so the browser fetches them together instead of level by level.
    const preload = Object.keys(CONSOLE_ASSETS)
      .filter((asset) => asset.endsWith('.js') && asset !== 'app.js')
      .map((asset) => `\n    <link rel="modulepreload" href="${at}/console/${asset}">`)
      .join('');
    const html = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta name="referrer" content="no-referrer">
    <link rel="icon" href="data:,">
    <title>carebridge console</title>
    <link rel="stylesheet" type="text/css" href="${at}/console/console.css" />
    <script type="module" src="${at}/console/app.js"></script>${preload}
  </head>
  <body>
    <a class="skip" href="#main">Skip to content</a>
    <div id="app" data-base="${at}"><main id="main" tabindex="-1"><p>Loading the console…</p></main></div>
    <noscript>The console needs JavaScript.</noscript>
  </body>
</html>
`;
    return { contentType: 'text/html; charset=utf-8', headers: { 'content-security-policy': CONTENT_SECURITY_POLICY, 'cache-control': 'no-cache' }, body: html };
  }
  const contentType = Object.hasOwn(CONSOLE_ASSETS, name) ? CONSOLE_ASSETS[name] : undefined;
  if (!contentType) return undefined;
  // Revalidated on every load: the modules import each other by plain names, so a stale one would mix versions.
  return { contentType, headers: { 'cache-control': 'no-cache' }, body: createReadStream(new URL(`./console-assets/${name}`, import.meta.url)) };
}
