import type { Model, ModelVersion } from '../db/entities';
import type { Prediction } from '../engines/tabular/model';
import { toNumber } from '../engines/tabular/schema';
import type { Row } from './datasets';
import { AppError, quoted } from './errors';

/**
 * The checks of rows to score against a model's training columns. Pure: an engine thread runs them on
 * rows it parsed itself (a large prediction body, services/staged-bodies.ts), the API on the others.
 */

interface ColumnInfo {
  name: string;
  type: string;
}

/** How many columns a sentence names; `missing_columns` and `unexpected_columns` list them all. */
const NAMED_COLUMNS = 10;

/** `"a", "b" and 998 more`: a row of 600,000 unknown columns made an 8 MB sentence, twice the answer it needed. */
function namedColumns(columns: string[]): string {
  const named = columns.slice(0, NAMED_COLUMNS).map((c) => `"${c}"`).join(', ');
  return columns.length > NAMED_COLUMNS ? `${named} and ${columns.length - NAMED_COLUMNS} more` : named;
}

/**
 * Column names must equal the training columns minus the target (COLUMN_MISMATCH names the missing
 * and unexpected ones); values must fit the column's type (SCHEMA_MISMATCH names the column).
 */
export function checkPredictionRows(model: Pick<Model, 'featureColumns' | 'target'>, version: Pick<ModelVersion, 'report'>, rows: Row[], firstIndex = 0): void {
  const expected = new Set(model.featureColumns);
  rows.forEach((row, index) => {
    const i = firstIndex + index;
    const keys = Object.keys(row);
    // own properties only: `"constructor" in row` is true of every object
    const missing = model.featureColumns.filter((c) => !Object.hasOwn(row, c));
    const unexpected = keys.filter((k) => !expected.has(k));
    if (missing.length > 0 || unexpected.length > 0) {
      const parts = [missing.length > 0 ? `missing ${namedColumns(missing)}` : null, unexpected.length > 0 ? `unexpected ${namedColumns(unexpected)}` : null].filter(Boolean);
      throw new AppError('COLUMN_MISMATCH', 400, `Row ${i}: the columns must be the training columns minus the target; ${parts.join('; ')}.`, {
        expected_columns: model.featureColumns,
        missing_columns: missing,
        unexpected_columns: unexpected,
        row: i,
      });
    }
  });
  const columns = ((version.report as { columns?: ColumnInfo[] }).columns ?? []).filter((c) => c.name !== model.target);
  for (const column of columns) {
    if (column.type !== 'numeric') continue;
    rows.forEach((row, index) => {
      const i = firstIndex + index;
      const value = row[column.name];
      if (value === null || value === undefined || typeof value === 'number') return;
      // Numeric text as the engine reads it (not Number(), which also reads "0x10"): the engine would
      // score such a value as missing, and a refresh would fold it as text.
      if (typeof value === 'string' && (value.trim() === '' || Number.isFinite(toNumber(value)))) return;
      throw new AppError('SCHEMA_MISMATCH', 400, `Row ${i}: column "${column.name}" was numeric in training but received ${quoted(value)}.`, {
        column: column.name,
        expected_type: 'numeric',
        row: i,
      });
    });
  }
}

/** The answer's rows: each prediction with its request_id, then one `proba_<class>` per class. */
export function predictionOutputs(scored: readonly Prediction[], ids: readonly string[]): Array<Record<string, unknown>> {
  return scored.map((p, i) => {
    const output: Record<string, unknown> = { request_id: ids[i], prediction: p.prediction };
    for (const [label, probability] of Object.entries(p.probabilities ?? {})) output[`proba_${label}`] = probability;
    return output;
  });
}
