import Papa from 'papaparse';
import type { Row, Scalar } from '../api/types';

export interface Table {
  columns: string[];
  rows: Row[];
}

/** Reads CSV text as the service does: header row, separator detected, numbers typed, empty cells null. */
export function parseCsv(text: string): Table {
  const parsed = Papa.parse<Record<string, unknown>>(text.trim(), { header: true, dynamicTyping: true, skipEmptyLines: 'greedy' });
  if (parsed.errors.length > 0 && parsed.data.length === 0) throw new Error(`The CSV cannot be read: ${parsed.errors[0]?.message ?? 'unknown error'}.`);
  const columns = (parsed.meta.fields ?? []).filter((c) => c !== '');
  const rows = parsed.data.map((record) => {
    const row: Row = {};
    for (const column of columns) {
      const value = record[column];
      row[column] = value === undefined || value === '' ? null : (value as Scalar);
    }
    return row;
  });
  return { columns, rows };
}

/**
 * A text cell a spreadsheet would run as a formula (=, +, -, @, tab or carriage return first) gets a
 * leading apostrophe; numbers, negative ones included, stay numbers. The service's forecast CSV follows
 * the same rule (services/forecasting.ts, neutraliseCell); the console's bundle does not import
 * server code, hence this copy. Class labels, column names and scored values come from data any member
 * of a workspace may have uploaded.
 */
function neutraliseCell(value: unknown): unknown {
  if (typeof value !== 'string' || !/^[=+\-@\t\r]/.test(value)) return value;
  return value.trim() !== '' && Number.isFinite(Number(value)) ? value : `'${value}`;
}

/** A cell holding another separator a spreadsheet may split on (`;`, a tab, `|`) is quoted, as the forecast CSV's are. */
const holdsSeparator = (value: unknown): boolean => typeof value === 'string' && /[;\t|]/.test(value);

export function toCsv(columns: string[], rows: Array<Record<string, unknown>>): string {
  return Papa.unparse(
    { fields: columns.map((c) => String(neutraliseCell(c))), data: rows.map((r) => columns.map((c) => neutraliseCell(r[c] ?? ''))) },
    { quotes: holdsSeparator },
  );
}
