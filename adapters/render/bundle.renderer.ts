import PDFDocument from 'pdfkit';
import type { FhirBundle } from '../../core/ports/ccda.port.js';
import type { RenderContext, RendererPort } from '../../core/ports/renderer.port.js';
import { formatInstant } from './dates.js';
import { COLUMNS, sectionsOf, type Section } from './summary.js';

const NO_DATA = 'There is no data for this patient.';

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);
}

function countLabel(count: number): string {
  return `${count} entr${count === 1 ? 'y' : 'ies'}`;
}

/** The lines under the title: what the rendering is and whose; when it was made and how much it holds, or that it holds nothing. */
function aboutLines(context: RenderContext, sections: Section[]): { what: string; generated: string; noData: boolean } {
  const whose = context.patientName ? ` of ${context.patientName}` : '';
  const what = context.kind === 'document' ? `One document from the medical record${whose}, not the whole record.` : `Consolidated from the documents and data in the medical record${whose}.`;
  const total = sections.reduce((sum, section) => sum + section.rows.length, 0);
  const generated = `Generated ${formatInstant(context.generatedAt)}`;
  return { what, generated: total === 0 ? generated : `${generated} · ${countLabel(total)}`, noData: total === 0 };
}

/**
 * Renders a bundle for people: a self-contained HTML page, or a real PDF made with pdfkit. Both say what
 * they are (the context's title; one document or the consolidated record; whose; when made), then a
 * section per part of the record with a human heading in clinical order (summary.ts), rows newest first
 * with dates written for people, exact duplicates once. HTML escapes every value; a PDF carries the
 * patient's name and "Page N of M" on every page. An empty bundle renders a page saying there is no data.
 */
export class BundleRenderer implements RendererPort {
  async render(bundle: FhirBundle, format: 'html' | 'pdf', context: RenderContext): Promise<Uint8Array> {
    return format === 'pdf' ? renderPdf(bundle, context) : new TextEncoder().encode(renderHtml(bundle, context));
  }
}

export function renderHtml(bundle: FhirBundle, context: RenderContext): string {
  const sections = sectionsOf(bundle);
  const { what, generated, noData } = aboutLines(context, sections);
  const contents = sections.map((section) => `<li><a href="#${section.id}">${escapeHtml(section.title)}</a> (${section.rows.length})</li>`);
  const body = sections.map((section) => {
    const rows = section.rows.map((row) => `<tr>${COLUMNS.map(([field]) => `<td class="${field}">${escapeHtml(row[field])}</td>`).join('')}</tr>`);
    return [
      `<section id="${section.id}">`,
      `<h2>${escapeHtml(section.title)} <small>(${section.rows.length})</small></h2>`,
      `<table><thead><tr>${COLUMNS.map(([, label]) => `<th>${label}</th>`).join('')}</tr></thead>`,
      `<tbody>${rows.join('')}</tbody></table>`,
      '</section>',
    ].join('');
  });
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(context.title)}</title>`,
    '<style>body{font-family:system-ui,sans-serif;margin:2rem;color:#222;line-height:1.35}table{border-collapse:collapse;width:100%;margin-bottom:1.5rem}',
    'th,td{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f3f3f3}td.date{white-space:nowrap}',
    'h1{margin-bottom:.2rem}h2 small,.generated{color:#666;font-weight:normal}nav ul{columns:2;padding-left:1.2rem}',
    '@media print{nav{display:none}section{break-inside:avoid-page}}</style>',
    '</head><body>',
    '<header>',
    `<h1>${escapeHtml(context.title)}</h1>`,
    `<p class="about">${escapeHtml(what)}</p>`,
    `<p class="generated">${escapeHtml(generated)}</p>`,
    '</header>',
    noData ? `<p>${NO_DATA}</p>` : '',
    sections.length > 1 ? `<nav aria-label="Contents"><ul>${contents.join('')}</ul></nav>` : '',
    ...body,
    '</body></html>',
  ].join('\n');
}

/**
 * pdfkit's standard fonts speak WinAnsi: other characters would print as garbage, so they become "?";
 * invisible format characters (zero-width spaces and joiners) print nothing rather than a "?".
 */
const WIN_ANSI_EXTRAS = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');
function pdfText(value: string): string {
  return Array.from(value.replace(/\p{Cf}/gu, ''), (char) => {
    const code = char.codePointAt(0)!;
    if (char === '\n' || char === '\t') return char;
    return (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) || WIN_ANSI_EXTRAS.has(char) ? char : '?';
  }).join('');
}

const MARGIN = 50;

/** `value` cut to fit `width` points in the current font, with an ellipsis when cut. */
function fitted(doc: PDFKit.PDFDocument, value: string, width: number): string {
  if (doc.widthOfString(value) <= width) return value;
  let cut = value;
  while (cut.length > 0 && doc.widthOfString(`${cut}…`) > width) cut = cut.slice(0, -1);
  return `${cut.trimEnd()}…`;
}

/**
 * The running head and foot of every page, written once all pages exist (so "of M" is known): the
 * patient's name and the title above, when it was made and "Page N of M" below. They sit in the margins,
 * so the margins are lifted while writing: text past the bottom margin would otherwise start a new page.
 */
function writePageFurniture(doc: PDFKit.PDFDocument, context: RenderContext, generated: string): void {
  const range = doc.bufferedPageRange();
  for (let index = range.start; index < range.start + range.count; index++) {
    doc.switchToPage(index);
    const { page } = doc;
    const margins = page.margins;
    page.margins = { top: 0, bottom: 0, left: 0, right: 0 };
    const width = page.width - 2 * MARGIN;
    const half = width / 2 - 10;
    doc.font('Helvetica').fontSize(8).fillColor('#555555');
    const name = fitted(doc, pdfText(context.patientName), half);
    doc.text(name, MARGIN, 24, { lineBreak: false });
    const title = fitted(doc, pdfText(context.title), half);
    doc.text(title, page.width - MARGIN - doc.widthOfString(title), 24, { lineBreak: false });
    const bottom = page.height - 32;
    doc.text(pdfText(generated), MARGIN, bottom, { lineBreak: false });
    const number = `Page ${index - range.start + 1} of ${range.count}`;
    doc.text(number, page.width - MARGIN - doc.widthOfString(number), bottom, { lineBreak: false });
    page.margins = margins;
  }
  doc.fillColor('black');
}

function renderPdf(bundle: FhirBundle, context: RenderContext): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument({
      size: 'A4',
      margin: MARGIN,
      bufferPages: true,
      info: { Title: pdfText(context.title), Producer: 'carebridge', Creator: 'carebridge', CreationDate: context.generatedAt },
    });
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(new Uint8Array(Buffer.concat(chunks))));
    doc.on('error', reject);
    try {
      const sections = sectionsOf(bundle);
      const { what, generated, noData } = aboutLines(context, sections);
      doc.font('Helvetica-Bold').fontSize(18).text(pdfText(context.title));
      doc.moveDown(0.3).font('Helvetica').fontSize(10).text(pdfText(what));
      doc.fillColor('#555555').text(pdfText(generated)).fillColor('black');
      if (noData) doc.moveDown().text(NO_DATA);
      for (const section of sections) {
        doc.moveDown().font('Helvetica-Bold').fontSize(14).text(pdfText(`${section.title} (${section.rows.length})`));
        for (const row of section.rows) {
          doc.moveDown(0.3).font('Helvetica-Bold').fontSize(10).text(pdfText(row.name));
          const facts = [row.date, row.status, row.details].filter(Boolean).join(' · ');
          if (facts) doc.font('Helvetica').fontSize(9).text(pdfText(facts));
        }
      }
      writePageFurniture(doc, context, `Generated ${formatInstant(context.generatedAt)}`);
      doc.end();
    } catch (error) {
      reject(error);
    }
  });
}
