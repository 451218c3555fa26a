import { PAGINATION } from '../../config/plans';
import { z } from '../zod';
import { BIDI_CONTROL, CONTROL_CHARACTER, MAX_DISPLAY_NAME_LENGTH, VISIBLE } from '../../services/display-names';

export const errorEnvelopeSchema = z
  .object({
    status: z.literal('error'),
    message: z.string().openapi({ description: 'Machine-readable UPPERCASE code: branch on this.', example: 'NOT_FOUND' }),
    messageDetail: z.string().openapi({ description: 'Readable sentence; do not parse.' }),
  })
  .catchall(z.unknown())
  .openapi('Error', { description: 'Envelope of every error. Some codes add fields (e.g. balance and required on CREDITS_EXHAUSTED).' });

export const paginationSchema = z
  .object({
    total: z.number().int().min(0),
    limit: z.number().int().min(1),
    offset: z.number().int().min(0),
    has_more: z.boolean(),
  })
  .openapi('Pagination');

/**
 * An integer query parameter: decimal digits (with an optional minus sign, refused by the bounds).
 * z.coerce.number() read it with JavaScript's Number(): "0x10" was 16, "1e2" 100 and an empty value 0,
 * and the OpenAPI document called every such parameter without a minimum of 1 nullable (Number(null)
 * is 0), which no query string can send.
 */
export function queryInteger(min: number, max?: number) {
  const bounded = z.number({ error: (issue) => (typeof issue.input === 'string' ? 'expected an integer in decimal digits' : undefined) }).int().min(min);
  return z.preprocess((value) => (typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value), max === undefined ? bounded : bounded.max(max));
}

export function pageQuerySchema(maxLimit: number = PAGINATION.maxLimit, defaultLimit: number = PAGINATION.defaultLimit) {
  return z.object({
    limit: queryInteger(1, maxLimit).default(defaultLimit).openapi({ description: `Page size, default ${defaultLimit}, at most ${maxLimit}.` }),
    offset: queryInteger(0).default(0),
  });
}

/** One page of a list held whole in memory (a short, bounded list: workspaces, plans, engines). */
export function pageOf<T>(items: T[], page: { limit: number; offset: number }) {
  return paginated(items.slice(page.offset, page.offset + page.limit), items.length, page);
}

/** The `pagination` object of a page of `count` items. */
export function pagination(count: number, total: number, page: { limit: number; offset: number }) {
  return { total, limit: page.limit, offset: page.offset, has_more: page.offset + count < total };
}

export function paginated<T>(items: T[], total: number, page: { limit: number; offset: number }) {
  return { data: items, pagination: pagination(items.length, total, page) };
}

/**
 * The Idempotency-Key header of the routes that accept one: 1 to 255 visible ASCII characters, read by
 * runCommitted (api/middleware/idempotency.ts) and documented on those routes from this schema.
 */
export const idempotencyKeySchema = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, 'Idempotency-Key must be 1 to 255 visible ASCII characters.')
  .openapi({
    description:
      'Makes the call safe to retry: a retry with the same key and the same content (method, path, body, file) replays the first answer, charged once; a different content with the same key is 422 IDEMPOTENCY_KEY_REUSED, and a retry while the first call runs 409 REQUEST_IN_PROGRESS. One key per logical call, kept 24 hours per workspace. 1 to 255 visible ASCII characters.',
    example: 'order-1842-scoring',
  });


/**
 * A name people read in lists (account, workspace, API key, model): trimmed, 1 to `max` characters,
 * at least one of them visible, no control character and no bidirectional override or isolate. An
 * eighth probe named a workspace with a zero-width space alone and another with U+202E, which
 * displays whatever follows it reversed (a key named "\u202Egpj.exe" reads "exe.jpg"); a name of
 * only invisible characters shows as an empty line in every list. Marks such as U+200F (right-to-left
 * mark) and joiners inside emoji stay allowed, as they only shape the text around them.
 */
export function displayName(max = MAX_DISPLAY_NAME_LENGTH) {
  return z
    .string()
    .trim()
    .min(1)
    .max(max)
    .superRefine((value, ctx) => {
      const problem = CONTROL_CHARACTER.test(value)
        ? 'a name may not hold a control character (a line break, a tab…)'
        : BIDI_CONTROL.test(value)
          ? 'a name may not hold a bidirectional override or isolate (U+202A-U+202E, U+2066-U+2069)'
          : !VISIBLE.test(value)
            ? 'a name needs at least one visible character'
            : null;
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .openapi({
      description: `1 to ${max} characters once trimmed, at least one visible; no control characters nor line or paragraph separators (U+2028, U+2029), no bidirectional overrides or isolates (U+202A-U+202E, U+2066-U+2069).`,
    });
}

export const idempotencyHeaderSchema = z.object({ 'idempotency-key': idempotencyKeySchema.optional() });

export const isoDateTime = z.iso.datetime({ offset: true }).openapi({ description: 'ISO 8601 date-time', example: '2026-12-01T00:00:00Z' });

/**
 * The instants PostgreSQL stores and reads back as written (a timestamptz of year 0 or 10000, which an
 * offset can reach from a valid-looking date-time, fails the statement).
 */
export const EARLIEST_INSTANT_MS = Date.parse('0001-01-01T00:00:00.000Z');
export const LATEST_INSTANT_MS = Date.parse('9999-12-31T23:59:59.999Z');
export const OUTSIDE_STORABLE_YEARS = 'it must fall within the years 0001 to 9999 in UTC.';
export const isStorableInstant = (ms: number): boolean => ms >= EARLIEST_INSTANT_MS && ms <= LATEST_INSTANT_MS;

/** A date-time given in a body and stored: within the years 0001 to 9999 once read in UTC. */
export const storableDateTime = isoDateTime.refine((value) => isStorableInstant(Date.parse(value)), OUTSIDE_STORABLE_YEARS);

type CellValue = string | number | boolean | null;

const isCellValue = (value: unknown): value is CellValue => value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

/** What is wrong with a would-be row, or null when it is one. */
function rowProblem(value: unknown): string | null {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return 'Expected a row: an object of column name → value.';
  for (const column in value) {
    // as a CSV header's: a column needs a name
    if (column.trim() === '') return `Column ${JSON.stringify(column)}: a column name must hold more than spaces.`;
    if (!isCellValue((value as Record<string, unknown>)[column])) return `Column ${JSON.stringify(column)}: expected a number, string, boolean or null.`;
  }
  return null;
}

/**
 * One row of a dataset: column name → a scalar (nested objects and arrays are refused). Checked in
 * one pass that keeps the parsed object (a record of unions copied every row and tried each type
 * of every cell: a quarter of a 1,000-row prediction's time); documented as the same record.
 */
export const datasetRowSchema = z
  .custom<Record<string, CellValue>>((value) => rowProblem(value) === null, { error: (issue) => rowProblem(issue.input) ?? 'Invalid row.' })
  .openapi('DatasetRow', {
    type: 'object',
    additionalProperties: { type: ['string', 'number', 'boolean', 'null'] },
    description: 'One row: column name (more than spaces) → value (number, string, boolean or null).',
  });

/** How many refused rows a refusal names: the first ones, enough to fix the data by. */
export const MAX_ROW_ISSUES = 100;

/**
 * A list of rows (the plan's row limit is checked after, by the route): each row as datasetRowSchema,
 * but a list of bad rows stops at the first MAX_ROW_ISSUES. An array schema reports every bad
 * element, and a 6 MB body of two million non-rows kept the event loop some 20 s on building and
 * serialising two million issues (a 185 MB answer), stalling every other call of the process.
 * Documented as the plain array of DatasetRow (a preprocess step is documented as its output).
 */
export function datasetRowsSchema() {
  return z.preprocess((value, ctx) => {
    if (!Array.isArray(value)) return value;
    let refused = 0;
    for (let i = 0; i < value.length && refused < MAX_ROW_ISSUES; i++) {
      const problem = rowProblem(value[i]);
      if (problem === null) continue;
      refused++;
      ctx.issues.push({ code: 'custom', message: problem, input: value[i] as unknown, path: [i] });
    }
    return value;
  }, z.array(datasetRowSchema));
}
