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

export function toCsv(columns: string[], rows: Array<Record<string, unknown>>): string {
  return Papa.unparse({ fields: columns, data: rows.map((r) => columns.map((c) => r[c] ?? '')) });
}

/** Offers `text` as a file download (the browser's own download, nothing leaves the page). */
export function download(filename: string, text: string, type = 'text/csv'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
