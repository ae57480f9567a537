import { parse, type Options as CsvParseOptions } from 'csv-parse';
import { CoreError } from '../errors.js';
import { csvSafeLine } from './csv-text.js';

/** Patients per bulk request, at most. */
export const MAX_BULK_ROWS = 100_000;

const PARSER_OPTIONS: CsvParseOptions = {
  // Real-world exports: a UTF-8 BOM, CRLF, LF or CR line ends (CR alone from old spreadsheet tools for
  // the Mac), ragged rows, stray quotes inside unquoted cells. CRLF is listed first so it ends one record,
  // not two; a CR or LF inside a quoted cell stays part of the cell.
  bom: true,
  record_delimiter: ['\r\n', '\n', '\r'],
  relax_column_count: true,
  relax_quotes: true,
  skip_empty_lines: true,
  // A runaway quoted cell must not swallow a 200 MB file into one field.
  max_record_size: 1_000_000,
};

function isBlankRecord(record: readonly string[]): boolean {
  return record.every((cell) => cell.trim() === '');
}

/**
 * The records of a CSV byte stream, decoded as strict UTF-8, a chunk of records per chunk of input (one
 * await per input chunk, not per record: a 100,000-row check spent a tenth of its time in per-record
 * promises). Rows whose every cell is blank are skipped (trailing `,,,` lines of spreadsheet exports).
 * Throws CoreError CSV_INVALID for binary or non-UTF-8 content and for unparseable CSV, naming the line.
 * Streams: memory does not grow with the file.
 */
export async function* csvRecordChunks(input: AsyncIterable<Uint8Array | string>): AsyncGenerator<string[][]> {
  const parser = parse(PARSER_OPTIONS);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let records: string[][] = [];
  let failure: { error: unknown } | undefined;
  parser.on('data', (record: string[]) => {
    if (!isBlankRecord(record)) records.push(record);
  });
  parser.on('error', (error) => {
    failure ??= { error };
  });
  const finished = new Promise<void>((resolve) => {
    parser.once('end', resolve);
    parser.once('close', resolve);
  });
  try {
    for await (const chunk of input) {
      let text: string;
      try {
        text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
      } catch {
        throw new CoreError('CSV_INVALID', 'The file is not UTF-8 text; save it as CSV UTF-8 and upload it again');
      }
      // A NUL is never text: it marks a binary file, or text saved as UTF-16. Refusing the file also keeps
      // NUL out of every cell, which the stored records rely on (see RECORD_END) and PostgreSQL requires.
      if (text.includes('\u0000')) {
        throw new CoreError('CSV_INVALID', 'The file holds NUL characters: it is binary, or text saved as UTF-16, not CSV; save it as CSV UTF-8 and upload it again');
      }
      // The bytes themselves, once checked: handing the parser the decoded text would make it encode it again.
      parser.write(chunk);
      if (failure) throw failure.error;
      if (records.length > 0) {
        const ready = records;
        records = [];
        yield ready;
      }
    }
    try {
      decoder.decode();
    } catch {
      throw new CoreError('CSV_INVALID', 'The file is not UTF-8 text; save it as CSV UTF-8 and upload it again');
    }
    parser.end();
    await finished;
    if (failure) throw failure.error;
    if (records.length > 0) yield records;
  } catch (error) {
    throw toCsvError(error);
  } finally {
    if (!parser.destroyed) parser.destroy();
  }
}

/** `csvRecordChunks`, a record at a time. */
export async function* csvRecords(input: AsyncIterable<Uint8Array | string>): AsyncGenerator<string[]> {
  for await (const chunk of csvRecordChunks(input)) yield* chunk;
}

function toCsvError(error: unknown): CoreError {
  if (error instanceof CoreError) return error;
  const parserError = error as { code?: string; lines?: number; message?: string };
  if (typeof parserError.code === 'string' && parserError.code.startsWith('CSV_')) {
    const where = parserError.lines ? ` near line ${parserError.lines}` : '';
    const what =
      parserError.code === 'CSV_QUOTE_NOT_CLOSED'
        ? 'a quoted cell is never closed'
        : parserError.code === 'CSV_MAX_RECORD_SIZE'
          ? 'a row is larger than 1 MB'
          : 'the text is not valid CSV';
    return new CoreError('CSV_INVALID', `The file could not be read as CSV: ${what}${where}`, {
      details: { parserCode: parserError.code },
    });
  }
  return new CoreError('CSV_INVALID', 'The file could not be read as CSV', { cause: error });
}

/**
 * The records the upload check parsed, stored for the import so it does not parse the CSV again: each
 * record as the line the result CSV repeats (`csvSafeLine`: RFC 4180, formula-looking cells marked), ended
 * by NUL and a line feed; `csvSafeLineCells` gives back the cells as uploaded.
 * NUL never occurs in a cell (`csvRecords` refuses such a file as binary), so every NUL ends a record even
 * when a quoted cell holds line breaks. Reading a record back is a native split for most lines (those
 * without quotes), and the result row needs no second quoting.
 */
const RECORD_END = '\u0000\n';

/** Gathers records into chunks of the stored form, ready to write. */
export class RecordsWriter {
  private pending = '';
  private readonly encoder = new TextEncoder();

  /** Adds a record; returns a chunk to write when enough text has gathered. */
  add(record: readonly string[]): Uint8Array | undefined {
    this.pending += csvSafeLine(record) + RECORD_END;
    return this.pending.length >= 65_536 ? this.flush() : undefined;
  }

  /** What is left, if anything. */
  flush(): Uint8Array | undefined {
    if (this.pending === '') return undefined;
    const chunk = this.encoder.encode(this.pending);
    this.pending = '';
    return chunk;
  }
}

/**
 * The records of a byte stream written by `RecordsWriter`, as their lines (`csvSafeLineCells` gives the
 * cells), a chunk of records at a time (one await per chunk rather than per record). Throws CoreError
 * INTERNAL when the stream ends inside a record: the stored records are damaged and the CSV they came from
 * must be parsed again.
 */
export async function* storedRecordChunks(input: AsyncIterable<Uint8Array>): AsyncGenerator<string[]> {
  const decoder = new TextDecoder('utf-8');
  let rest = '';
  for await (const chunk of input) {
    const lines = (rest + decoder.decode(chunk, { stream: true })).split(RECORD_END);
    rest = lines.pop()!;
    if (lines.length > 0) yield lines;
  }
  if (rest + decoder.decode() !== '') throw new CoreError('INTERNAL', 'The stored records of the upload are damaged');
}
