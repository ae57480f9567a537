import PDFDocument from 'pdfkit';
import type { FhirBundle } from '../../core/ports/ccda.port.js';
import type { RendererPort } from '../../core/ports/renderer.port.js';
import { COLUMNS, groupByType, summarise } from './summary.js';

const TITLE = 'Consolidated medical record';
const NO_DATA = 'There is no data for this patient.';

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);
}

function countLabel(count: number): string {
  return `${count} resource${count === 1 ? '' : 's'}`;
}

/**
 * Renders a consolidated bundle for people: a self-contained HTML page (a section per resource type,
 * each a table of name, date, status and details; every value escaped), or a real PDF made with pdfkit
 * (a heading per type, a paragraph per resource). An empty bundle renders a page saying there is no data.
 */
export class BundleRenderer implements RendererPort {
  async render(bundle: FhirBundle, format: 'html' | 'pdf'): Promise<Uint8Array> {
    return format === 'pdf' ? renderPdf(bundle) : new TextEncoder().encode(renderHtml(bundle));
  }
}

export function renderHtml(bundle: FhirBundle): string {
  const groups = groupByType(bundle);
  const total = groups.reduce((sum, group) => sum + group.resources.length, 0);
  const sections = groups.map((group) => {
    const rows = group.resources.map((resource) => {
      const summary = summarise(resource);
      return `<tr>${COLUMNS.map(([field]) => `<td>${escapeHtml(summary[field])}</td>`).join('')}</tr>`;
    });
    return [
      `<section id="${escapeHtml(group.resourceType)}">`,
      `<h2>${escapeHtml(group.resourceType)} <small>(${group.resources.length})</small></h2>`,
      `<table><thead><tr>${COLUMNS.map(([, label]) => `<th>${label}</th>`).join('')}</tr></thead>`,
      `<tbody>${rows.join('')}</tbody></table>`,
      '</section>',
    ].join('');
  });
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${TITLE}</title>`,
    '<style>body{font-family:system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse;width:100%;margin-bottom:1.5rem}',
    'th,td{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f3f3f3}h2 small{color:#777;font-weight:normal}</style>',
    '</head><body>',
    `<h1>${TITLE}</h1>`,
    total === 0 ? `<p>${NO_DATA}</p>` : `<p>${countLabel(total)}</p>`,
    ...sections,
    '</body></html>',
  ].join('\n');
}

/** pdfkit's standard fonts speak WinAnsi: other characters would print as garbage, so they become "?". */
const WIN_ANSI_EXTRAS = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');
function pdfText(value: string): string {
  return Array.from(value, (char) => {
    const code = char.codePointAt(0)!;
    if (char === '\n' || char === '\t') return char;
    return (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) || WIN_ANSI_EXTRAS.has(char) ? char : '?';
  }).join('');
}

function renderPdf(bundle: FhirBundle): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: TITLE, Producer: 'carebridge', Creator: 'carebridge' } });
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(new Uint8Array(Buffer.concat(chunks))));
    doc.on('error', reject);
    try {
      const groups = groupByType(bundle);
      const total = groups.reduce((sum, group) => sum + group.resources.length, 0);
      doc.font('Helvetica-Bold').fontSize(18).text(TITLE);
      doc.moveDown(0.5).font('Helvetica').fontSize(11).text(total === 0 ? NO_DATA : countLabel(total));
      for (const group of groups) {
        doc.moveDown().font('Helvetica-Bold').fontSize(14).text(pdfText(`${group.resourceType} (${group.resources.length})`));
        for (const resource of group.resources) {
          const summary = summarise(resource);
          doc.moveDown(0.3).font('Helvetica-Bold').fontSize(10).text(pdfText(summary.name || resource.resourceType));
          const facts = [summary.date, summary.status, summary.details].filter(Boolean).join(' · ');
          if (facts) doc.font('Helvetica').fontSize(9).text(pdfText(facts));
        }
      }
      doc.end();
    } catch (error) {
      reject(error);
    }
  });
}
