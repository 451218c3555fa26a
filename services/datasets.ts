import Papa from 'papaparse';
import { parseJsonBody } from './json';
import { PLANS, type PlanName } from '../config/plans';
import { AppError, validationError } from './errors';
import { findEngine } from '../engines/catalogue';

export type Row = Record<string, unknown>;

/** The seed of every fit and trial run: the same rows train the same model, and get the same trial. */
export const TRAINING_SEED = 42;

const DELIMITERS = [',', ';', '\t', '|'];

const unreadable = (detail: string): AppError => new AppError('CSV_UNREADABLE', 400, detail);

/** How a file's cells are read. */
export interface ParseOptions {
  /**
   * Columns whose cells stay text as written (an identifier such as a forecast's item_id: "007" and
   * "7" are two stores, and the answer must name them as the file did); every other column's numeric
   * text is typed.
   */
  textColumns?: readonly string[];
}

/**
 * A separator ending every line (what some exports write) makes a last column with no name and no
 * value: it is not a column of the data, so it is left out (a thirteenth probe: such files were 400,
 * "empty column name"). A nameless column holding any value is still refused below.
 */
function dropTrailingEmptyColumn(fields: string[], rows: Row[]): void {
  const last = fields[fields.length - 1];
  if (fields.length < 2 || last === undefined || last.trim() !== '') return;
  if (!rows.every((row) => row[last] === null || row[last] === undefined || row[last] === '')) return;
  fields.pop();
  for (const row of rows) delete row[last];
}

/**
 * Parses CSV text: separator detected among comma, semicolon, tab and pipe; numeric text typed
 * (except in `textColumns`); empty cells null (papaparse). Anything that is not a well-formed table
 * answers 400 CSV_UNREADABLE.
 */
export function parseCsv(text: string, options: ParseOptions = {}): Row[] {
  if (text.includes('\u0000')) throw unreadable('The file is not text: it contains NUL bytes.');
  const body = text.replace(/^\uFEFF/, '');
  if (body.trim() === '') throw unreadable('The CSV file is empty.');
  const parsed = Papa.parse<Row>(body, {
    header: true,
    dynamicTyping: options.textColumns?.length ? (field: string | number) => !options.textColumns!.includes(String(field)) : true,
    skipEmptyLines: 'greedy',
    delimitersToGuess: DELIMITERS,
  });
  const fatal = parsed.errors.find((e) => e.type === 'Quotes' || e.type === 'FieldMismatch');
  if (fatal) {
    const where = fatal.row !== undefined ? ` (data row ${fatal.row + 1})` : '';
    throw unreadable(`The CSV could not be parsed${where}: ${fatal.message}.`);
  }
  const fields = parsed.meta.fields ?? [];
  dropTrailingEmptyColumn(fields, parsed.data);
  if (fields.length === 0 || fields.some((f) => f.trim() === '')) throw unreadable('The CSV header row has an empty column name.');
  const renamed = (parsed.meta as { renamedHeaders?: Record<string, string> | null }).renamedHeaders;
  if (new Set(fields).size !== fields.length || (renamed && Object.keys(renamed).length > 0)) {
    throw unreadable('The CSV header row repeats a column name.');
  }
  if (fields.includes('__proto__')) throw unreadable('The CSV header row names a column "__proto__", which is not allowed.');
  if (parsed.data.length === 0) throw unreadable('The CSV has a header row but no data rows.');
  parsed.data.forEach((row, i) => {
    for (const [column, value] of Object.entries(row)) {
      if (typeof value === 'number' && !Number.isFinite(value)) {
        throw new AppError('VALIDATION_ERROR', 400, `Invalid file: data row ${i + 1}, column "${column}" holds a number out of range (${JSON.stringify(value)}).`);
      }
    }
  });
  return parsed.data;
}

/** A JSON file: an array of row objects, or an object holding one under `data` or `rows`. */
export function parseJsonRows(text: string): Row[] {
  const value = parseJsonBody(text.replace(/^\uFEFF/, ''));
  const rows = Array.isArray(value) ? value : (value as { data?: unknown; rows?: unknown } | null)?.data ?? (value as { rows?: unknown } | null)?.rows;
  if (!Array.isArray(rows)) throw new AppError('VALIDATION_ERROR', 400, 'The JSON file must hold an array of row objects (or {"data": [...]}).');
  return checkRows(rows, 'file');
}

/** Rows must be plain objects of scalars (null, number, string, boolean). */
export function checkRows(rows: unknown[], where: string): Row[] {
  rows.forEach((row, i) => {
    if (row === null || typeof row !== 'object' || Array.isArray(row)) {
      throw new AppError('VALIDATION_ERROR', 400, `Invalid ${where}[${i}]: each row must be an object of column values.`);
    }
    for (const [column, value] of Object.entries(row)) {
      if (column.trim() === '') throw new AppError('VALIDATION_ERROR', 400, `Invalid ${where}[${i}]: a column name must hold more than spaces.`);
      if (value !== null && typeof value === 'object') {
        throw new AppError('VALIDATION_ERROR', 400, `Invalid ${where}[${i}].${column}: values must be numbers, strings, booleans or null.`);
      }
    }
  });
  return rows as Row[];
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });
const WINDOWS_1252 = new TextDecoder('windows-1252');
const STRICT_UTF16LE = new TextDecoder('utf-16le', { fatal: true });
const STRICT_UTF16BE = new TextDecoder('utf-16be', { fatal: true });

/**
 * A CSV that starts with a UTF-16 byte order mark is UTF-16 text: what Excel's "Unicode Text" and
 * Windows PowerShell's `Out-File` write. It was read as Windows-1252, and its every other byte, a NUL,
 * refused it as "not text" (a thirteenth probe). Null when the file has no such mark.
 */
function utf16Text(content: Buffer): string | null {
  const le = content.length >= 2 && content[0] === 0xff && content[1] === 0xfe;
  const be = content.length >= 2 && content[0] === 0xfe && content[1] === 0xff;
  if (!le && !be) return null;
  try {
    // the decoder drops the mark itself
    return (le ? STRICT_UTF16LE : STRICT_UTF16BE).decode(content);
  } catch {
    throw unreadable('The file starts with a UTF-16 byte order mark but is not UTF-16 text.');
  }
}

/**
 * An uploaded file's text. JSON is UTF-8 (RFC 8259): other bytes are 400 INVALID_JSON. A CSV with a
 * UTF-16 byte order mark is UTF-16; one that is not valid UTF-8 is read as Windows-1252, what spreadsheets on Western systems write as "CSV": every
 * byte maps to its own character, so distinct values stay distinct. Read as UTF-8, each such byte
 * became U+FFFD, and "Zürich" and "Zärich" one category.
 */
function fileText(content: Buffer, kind: 'csv' | 'json'): string {
  if (kind === 'csv') {
    const utf16 = utf16Text(content);
    if (utf16 !== null) return utf16;
  }
  try {
    return STRICT_UTF8.decode(content);
  } catch {
    if (kind === 'json') throw new AppError('INVALID_JSON', 400, 'The JSON file is not UTF-8 text; JSON is exchanged as UTF-8.');
    return WINDOWS_1252.decode(content);
  }
}

/** Decides CSV or JSON from the file name, the declared type, then the content. */
export function parseUploadedFile(file: { name: string | null; mimetype: string | null; content: Buffer }, options: ParseOptions = {}): Row[] {
  const name = (file.name ?? '').toLowerCase();
  const mimetype = (file.mimetype ?? '').toLowerCase();
  const declaredJson = name.endsWith('.json') || mimetype.includes('json');
  const text = fileText(file.content, declaredJson ? 'json' : 'csv');
  const looksJson = declaredJson || (!name.endsWith('.csv') && /^\s*[[{]/.test(text));
  return looksJson ? parseJsonRows(text) : parseCsv(text, options);
}

/** A plan trains on at most its `maxTrainingRows` rows: 413 TOO_MANY_ROWS beyond, on training and on its free trial alike. */
export function refuseBeyondTrainingRows(plan: PlanName, rows: number): void {
  const maxRows = PLANS[plan].maxTrainingRows;
  if (maxRows !== null && rows > maxRows) {
    throw new AppError('TOO_MANY_ROWS', 413, `Your plan trains on at most ${maxRows} rows; got ${rows}.`, { limit: maxRows, rows });
  }
}

/**
 * The checks of a new model's request before its rows are analysed, in the order a client meets them:
 * an engine is named, it is a tabular engine of the catalogue, the rows fit the plan.
 */
export function checkedTrainingEngine(plan: PlanName, engineId: string | undefined, rows: number): NonNullable<ReturnType<typeof findEngine>> {
  if (!engineId) throw validationError('Invalid body.engine: required when creating a model (engine ids come from GET /v1/engines).');
  const engine = tabularEngine(engineId);
  refuseBeyondTrainingRows(plan, rows);
  return engine;
}

/** The engine's refusal of a dataset (its code and message, from whichever thread), as the contract's answer. */
export function dataRefusal(err: { code: string; message: string }): AppError {
  if (err.code === 'TARGET_MISSING' || err.code === 'INVALID_OPTIONS') return new AppError('VALIDATION_ERROR', 400, err.message);
  return new AppError('DATA_VALIDATION_FAILED', 422, err.message, { report: { valid: false, errors: [{ code: err.code, message: err.message }] } });
}

/**
 * An engine named for training must be a tabular engine of GET /v1/engines: 400 otherwise, on training
 * and on its free validation alike (validation ignored it, and answered `valid: true` for a body that
 * training then refused for its engine: a ninth probe).
 */
export function tabularEngine(engineId: string): NonNullable<ReturnType<typeof findEngine>> {
  const engine = findEngine(engineId);
  if (!engine || engine.kind !== 'tabular') throw validationError(`Invalid body.engine: ${engineId} is not a tabular engine of GET /v1/engines.`);
  return engine;
}

/**
 * The checks of a validation's rows before the engine reads them, in the order a client meets them:
 * the engine, when one is named, is a tabular engine of the catalogue; the rows fit the plan (413
 * TOO_MANY_ROWS as training answers: a seventh probe's free plan, 10,000 rows, was told that 200,000
 * rows were valid, after a trial fit on all of them).
 */
export function checkValidationRows(plan: PlanName, engineId: string | undefined, rows: number): void {
  if (engineId !== undefined) tabularEngine(engineId);
  refuseBeyondTrainingRows(plan, rows);
}

/** The engine's refusal of a validation's rows: a report with valid false, except a request it cannot even start (no target), a 400. */
export function validationRefusal(err: { code: string; message: string }): { code: string; message: string } {
  if (err.code === 'TARGET_MISSING' || err.code === 'INVALID_OPTIONS') throw new AppError('VALIDATION_ERROR', 400, err.message);
  return { code: err.code, message: err.message };
}
