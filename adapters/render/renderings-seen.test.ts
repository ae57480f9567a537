import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FhirBundle, FhirResource } from '../../core/ports/ccda.port.js';
import type { RenderContext } from '../../core/ports/renderer.port.js';
import { CHROMIUM, CHROMIUM_ARGS, systemTool } from '../../spec/support/system-tools.js';
import { MedplumCcdaConverter } from '../ccda/medplum.ccda.js';
import { BundleRenderer } from './bundle.renderer.js';
import { SECTIONS } from './summary.js';

/**
 * The renderings as a person sees them, on a record made of every sandbox C-CDA through the project's
 * converter: the HTML laid out by headless Chromium, the PDF read back by poppler (pdfinfo, pdftotext,
 * pdftoppm). Structural assertions only, nothing compared pixel by pixel, so fonts and versions cannot make
 * them flaky. Chromium and poppler are required under CI (.ci/run installs them); elsewhere the tests that
 * need a missing one are skipped with the reason printed.
 */
const browserPath = systemTool(CHROMIUM, 'Chromium', 'apt-get install -y chromium');
const poppler = ['pdftoppm', 'pdftotext', 'pdfinfo'].every((tool) => systemTool(tool, `poppler's ${tool}`, 'apt-get install -y poppler-utils'));
const run = promisify(execFile);
// The page functions below run in the browser; these name what they use there (the project compiles without the DOM library).
declare const document: { documentElement: { scrollWidth: number; scrollHeight: number }; createElement(tag: 'canvas'): BrowserCanvas };
declare const Image: new () => { src: string; naturalWidth: number; naturalHeight: number; decode(): Promise<void> };
interface BrowserCanvas {
  width: number;
  height: number;
  getContext(kind: '2d'): { drawImage(image: unknown, x: number, y: number): void; getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
}

const fixturesDir = fileURLToPath(new URL('../../sandbox-data/ccda/', import.meta.url));
const patient: FhirResource = { resourceType: 'Patient', id: 'p', name: [{ given: ['Eve'], family: 'Betterhalf' }], gender: 'female', birthDate: '1975-05-01' };
const context: RenderContext = { kind: 'medical-record', title: 'Medical record of Eve Betterhalf', patientName: 'Eve Betterhalf', generatedAt: new Date('2024-01-15T09:30:00Z') };
const renderer = new BundleRenderer();
const DATE = String.raw`(?:\d{1,2} [A-Z][a-z]{2} \d{4}(?:, \d{2}:\d{2})?|[A-Z][a-z]{2} \d{4}|\d{4})`;
const DATE_CELL = new RegExp(`^(?:|${DATE}|from ${DATE}|until ${DATE}|${DATE} – ${DATE})$`);

/** Every sandbox document converted, its own Patient left out for ours, as a consolidated record of one patient. */
async function record(): Promise<FhirBundle> {
  const converter = new MedplumCcdaConverter();
  const resources: FhirResource[] = [patient];
  for (const file of readdirSync(fixturesDir).filter((name) => name.endsWith('.xml')).sort()) {
    const bundle = await converter.convert(readFileSync(path.join(fixturesDir, file), 'utf8'));
    resources.push(...(bundle.entry ?? []).flatMap((entry) => (entry.resource && entry.resource.resourceType !== 'Patient' ? [entry.resource] : [])));
  }
  return { resourceType: 'Bundle', type: 'collection', entry: resources.map((resource) => ({ resource })) };
}

let bundle: FhirBundle;
beforeAll(async () => {
  bundle = await record();
}, 60_000);

describe.skipIf(!browserPath)('the HTML rendering in Chromium', () => {
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: browserPath!, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1000, height: 800 }, deviceScaleFactor: 1 });
    await page.setContent(new TextDecoder().decode(await renderer.render(bundle, 'html', context)));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  test('titled as the medical record of the patient; sections under human names, in clinical order, one below the other', async () => {
    expect(await page.title()).toBe('Medical record of Eve Betterhalf');
    expect(await page.locator('h1').allInnerTexts()).toEqual(['Medical record of Eve Betterhalf']);
    const headings = await page.locator('section > h2').evaluateAll((nodes) =>
      nodes.map((node) => ({ text: (node.firstChild?.textContent ?? '').trim(), top: node.getBoundingClientRect().top, width: node.getBoundingClientRect().width })),
    );
    const known = SECTIONS.map((section) => section.title);
    expect(headings.map((heading) => heading.text)).toEqual(known.filter((title) => headings.some((heading) => heading.text === title)));
    expect(headings.map((heading) => heading.text)).toEqual(expect.arrayContaining(['Patient', 'Allergies and intolerances', 'Problems', 'Medications', 'Immunizations', 'Results and vital signs', 'Procedures', 'Encounters', 'Family history', 'Care plan']));
    for (const [index, heading] of headings.entries()) {
      expect(heading.width).toBeGreaterThan(0);
      if (index > 0) expect(heading.top).toBeGreaterThan(headings[index - 1]!.top);
    }
  });

  test('every row has a name, dates written for people, and no row repeats in its section', async () => {
    const sections = await page.locator('section').evaluateAll((nodes) =>
      nodes.map((section) => ({
        title: (section.querySelector('h2')?.firstChild?.textContent ?? '').trim(),
        rows: [...section.querySelectorAll('tbody tr')].map((row) => [...row.querySelectorAll('td')].map((cell) => (cell as unknown as { innerText: string }).innerText.trim())),
      })),
    );
    expect(sections.length).toBeGreaterThan(5);
    for (const section of sections) {
      expect(section.rows.length, section.title).toBeGreaterThan(0);
      for (const [name, date] of section.rows) {
        expect(name, `a name in ${section.title}`).not.toBe('');
        expect(date, `a date in ${section.title}`).toMatch(DATE_CELL);
      }
      const keys = section.rows.map((row) => row.join('|'));
      expect(new Set(keys).size, `rows of ${section.title}`).toBe(keys.length);
    }
    const family = sections.find((section) => section.title === 'Family history')!;
    expect(family.rows.map(([name]) => name)).toContain('Father');
    const results = sections.find((section) => section.title === 'Results and vital signs')!;
    expect(results.rows.filter(([name]) => name === 'Body height').length).toBeLessThan(bundle.entry!.filter((entry) => JSON.stringify(entry.resource?.code ?? '').includes('Body height')).length);
  });

  test('a screenshot of the whole page is the page, and not blank', async () => {
    const size = await page.evaluate(() => ({ width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight }));
    const png = await page.screenshot({ fullPage: true, type: 'png' });
    // Decoded by the browser itself: the image's size, and the share of pixels that are not white.
    const viewer = await browser.newPage();
    try {
      const seen = await viewer.evaluate(async (dataUrl) => {
        const image = new Image();
        image.src = dataUrl;
        await image.decode();
        const canvas = document.createElement('canvas');
        canvas.width = image.naturalWidth;
        canvas.height = image.naturalHeight;
        const context2d = canvas.getContext('2d')!;
        context2d.drawImage(image, 0, 0);
        const { data } = context2d.getImageData(0, 0, canvas.width, canvas.height);
        let inked = 0;
        for (let i = 0; i < data.length; i += 4) if (data[i]! < 200 || data[i + 1]! < 200 || data[i + 2]! < 200) inked++;
        return { width: image.naturalWidth, height: image.naturalHeight, inked: inked / (data.length / 4) };
      }, `data:image/png;base64,${png.toString('base64')}`);
      expect(seen.width).toBe(size.width);
      expect(seen.height).toBe(size.height);
      expect(seen.height).toBeGreaterThan(2000);
      expect(seen.inked).toBeGreaterThan(0.01);
      expect(seen.inked).toBeLessThan(0.5);
    } finally {
      await viewer.close();
    }
  });
});

/** A PGM (P5) image: its size and grey bytes, 0 black to 255 white. */
function readPgm(bytes: Buffer): { width: number; height: number; pixels: Buffer } {
  const header = /^P5\s+(\d+)\s+(\d+)\s+(\d+)\s/.exec(bytes.subarray(0, 40).toString('latin1'));
  if (!header) throw new Error('not a binary PGM');
  const [whole, width, height] = header;
  return { width: Number(width), height: Number(height), pixels: bytes.subarray(whole.length) };
}

/** Whether the rows of the image from `from` to `to` (fractions of its height) hold any ink: small grey text at low resolution comes out light. */
function inked(image: { width: number; height: number; pixels: Buffer }, from: number, to: number): boolean {
  const start = Math.floor(image.height * from) * image.width;
  const end = Math.floor(image.height * to) * image.width;
  return image.pixels.subarray(start, end).some((grey) => grey < 200);
}

describe.skipIf(!poppler)('the PDF rendering through poppler', () => {
  let dir: string;
  let file: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'carebridge-pdf-'));
    file = path.join(dir, 'record.pdf');
    await writeFile(file, await renderer.render(bundle, 'pdf', context));
  }, 60_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('its title is the rendering\'s; every page carries the patient\'s name and "Page i of N"', async () => {
    const info = (await run('pdfinfo', [file])).stdout;
    expect(info).toMatch(/^Title:\s+Medical record of Eve Betterhalf$/m);
    const pages = Number(/^Pages:\s+(\d+)$/m.exec(info)?.[1]);
    expect(pages).toBeGreaterThan(2);
    const text = (await run('pdftotext', ['-layout', file, '-'], { maxBuffer: 32 * 1024 * 1024 })).stdout;
    const perPage = text.split('\f').filter((pageText) => pageText.trim() !== '');
    expect(perPage).toHaveLength(pages);
    for (const [index, pageText] of perPage.entries()) {
      const lines = pageText.split('\n').filter((line) => line.trim() !== '');
      expect(lines[0], `head of page ${index + 1}`).toMatch(/^Eve Betterhalf\s+Medical record of Eve Betterhalf$/);
      expect(lines.at(-1), `foot of page ${index + 1}`).toMatch(new RegExp(`^Generated 15 Jan 2024, 09:30 UTC\\s+Page ${index + 1} of ${pages}$`));
      expect(lines.length, `body of page ${index + 1}`).toBeGreaterThan(4);
    }
    expect(text).toContain('Allergies and intolerances');
    expect(text).not.toContain('AllergyIntolerance (');
    expect(text).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}/);
    // ccd-2.xml writes a zero-width space in this name: it prints as nothing, not as "?".
    expect(text).toContain('Leukocytes [#/volume] in Blood');
  });

  test('each page image has ink in its head, body and foot', async () => {
    await run('pdftoppm', ['-r', '36', '-gray', file, path.join(dir, 'page')]);
    const images = (await readdir(dir)).filter((name) => name.startsWith('page') && name.endsWith('.pgm')).sort();
    const pages = Number(/^Pages:\s+(\d+)$/m.exec((await run('pdfinfo', [file])).stdout)?.[1]);
    expect(images).toHaveLength(pages);
    for (const name of images) {
      const image = readPgm(await readFile(path.join(dir, name)));
      // A4 at 36 dpi: 298 x 421 pixels.
      expect([image.width, image.height]).toEqual([298, 421]);
      expect(inked(image, 0, 50 / 842), `head of ${name}`).toBe(true);
      expect(inked(image, 60 / 842, 780 / 842), `body of ${name}`).toBe(true);
      expect(inked(image, 800 / 842, 1), `foot of ${name}`).toBe(true);
    }
  });

  test('a single document\'s PDF carries its own title', async () => {
    const documentFile = path.join(dir, 'document.pdf');
    await writeFile(documentFile, await renderer.render(bundle, 'pdf', { ...context, kind: 'document', title: 'Continuity of Care Document' }));
    expect((await run('pdfinfo', [documentFile])).stdout).toMatch(/^Title:\s+Continuity of Care Document$/m);
    const text = (await run('pdftotext', ['-l', '1', documentFile, '-'])).stdout;
    expect(text).toContain('One document from the medical record of Eve Betterhalf');
  });
});
