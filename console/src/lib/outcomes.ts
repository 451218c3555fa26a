import type { Row, Scalar } from '../api/types';
import type { Table } from './csv';

export type Outcome = { actual: Scalar; request_id?: string; features?: Row };

/** The outcomes of a CSV: `actual`, and `request_id` (of a prediction) or the feature columns. */
export function outcomesOf(csv: Table, featureColumns: string[]): { outcomes: Outcome[]; problem: string | null } {
  if (!csv.columns.includes('actual')) return { outcomes: [], problem: 'The CSV needs an “actual” column with the observed values.' };
  const byId = csv.columns.includes('request_id');
  const missing = featureColumns.filter((c) => !csv.columns.includes(c));
  if (!byId && missing.length > 0) return { outcomes: [], problem: `The CSV needs a “request_id” column, or every feature column (missing: ${missing.join(', ')}).` };
  const outcomes: Outcome[] = [];
  for (const [i, row] of csv.rows.entries()) {
    const actual = row.actual;
    if (actual === null || actual === undefined) return { outcomes: [], problem: `Row ${i + 1} has no actual value.` };
    const requestId = byId ? row.request_id : null;
    if (requestId !== null && requestId !== undefined && String(requestId) !== '') outcomes.push({ request_id: String(requestId), actual });
    else if (missing.length === 0) outcomes.push({ features: Object.fromEntries(featureColumns.map((c) => [c, row[c] ?? null])), actual });
    else return { outcomes: [], problem: `Row ${i + 1} has no request_id, and the CSV lacks the feature columns ${missing.join(', ')}.` };
  }
  return { outcomes, problem: null };
}

