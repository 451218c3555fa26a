import { AppError } from './errors';

/** Deeper than any route's body needs; deeper bodies are refused before any code walks them. */
export const MAX_JSON_DEPTH = 64;

/**
 * Parses a JSON request body with the checks a plain JSON.parse lacks, so that what reaches the
 * routes is storable and unambiguous:
 * - NUL characters and lone UTF-16 surrogates (`"\ud800"`, valid JSON escapes that encode no character)
 *   in keys or strings are refused (PostgreSQL cannot store either in text, json or jsonb, and one such
 *   value in a statement shared by several calls would fail them all);
 * - numbers that overflow to ±Infinity (`1e999`) are refused (they would become targets and features);
 * - `__proto__` keys are refused (they would alter an object's prototype in code that copies rows);
 * - nesting deeper than MAX_JSON_DEPTH is refused (recursive code downstream would overflow its stack).
 * Each refusal is a 400 VALIDATION_ERROR naming where it was found; malformed text is INVALID_JSON.
 *
 * One plain parse, then one walk of the parsed value (JSON.parse keeps a `__proto__` key as an own
 * property, so the walk sees it). A reviver or a pattern test over the text each cost as much as the
 * parse itself on large bodies, which are read on the event loop.
 */
export function parseJsonBody(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw new AppError('INVALID_JSON', 400, 'The request body is not valid JSON.');
  }
  const problem = firstRefused(value);
  if (problem) throw new AppError('VALIDATION_ERROR', 400, `Invalid body: ${problem}.`);
  return value;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A JSON body's bytes read as parseJsonBody reads its text; no body (or only blanks) is `{}`, so that
 * routes with only optional fields accept it. JSON is UTF-8 (RFC 8259): bytes that are not were each
 * read as U+FFFD and stored so, a latin-1 "café" as "caf\uFFFD" (a sixth probe).
 */
export function parseJsonBytes(raw: Uint8Array): unknown {
  let text: string;
  try {
    text = UTF8.decode(raw);
  } catch {
    throw new AppError('INVALID_JSON', 400, 'The request body is not valid UTF-8; JSON is sent as UTF-8 whatever the declared charset.');
  }
  return text.trim() === '' ? {} : parseJsonBody(text);
}

// String.prototype.isWellFormed (ES2024, Node 20): false when a string holds a lone surrogate
const isWellFormed = (text: string): boolean => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

/** What makes a string unstorable (a NUL character, a lone surrogate), described; null when it is storable. */
export function unstorableText(text: string): string | null {
  if (text.includes('\u0000')) return 'holds a NUL character';
  if (!isWellFormed(text)) return 'holds a lone UTF-16 surrogate (an escape such as \\ud800 that encodes no character)';
  return null;
}

/**
 * Text from outside that we keep but do not refuse (a webhook receiver's answer, an error message):
 * NUL characters and lone surrogates become U+FFFD, so that PostgreSQL can store it.
 */
export function storableText(text: string): string {
  const wellFormed = isWellFormed(text) ? text : (text as unknown as { toWellFormed(): string }).toWellFormed();
  return wellFormed.includes('\u0000') ? wellFormed.replaceAll('\u0000', '\uFFFD') : wellFormed;
}

/** A refused string or number, described; null for anything else. */
function refusedScalar(value: unknown, key: string): string | null {
  if (typeof value === 'string') {
    const problem = unstorableText(value);
    return problem ? `the value of ${JSON.stringify(key)} ${problem}` : null;
  }
  if (typeof value === 'number') return Number.isFinite(value) ? null : `the number of ${JSON.stringify(key)} is out of range (not finite)`;
  return null;
}

/**
 * The first refused place of a parsed value, described; null when there is none. Recursion stops at
 * MAX_JSON_DEPTH, so the stack stays shallow whatever the body (JSON.parse itself nests without limit).
 */
function firstRefused(value: unknown, key = '', depth = 0): string | null {
  if (value === null || typeof value !== 'object') return refusedScalar(value, key);
  if (depth >= MAX_JSON_DEPTH) return `it is nested deeper than ${MAX_JSON_DEPTH} levels`;
  const isArray = Array.isArray(value);
  const record = value as Record<string, unknown>;
  for (const name in record) {
    if (!isArray) {
      if (name === '__proto__') return 'the key "__proto__" is not allowed';
      const problem = unstorableText(name);
      if (problem) return `the key ${JSON.stringify(name)} ${problem}`;
    }
    const item = record[name];
    // Cells (most of a large body) are checked here rather than through another call.
    const found = item !== null && typeof item === 'object' ? firstRefused(item, name, depth + 1) : refusedScalar(item, name);
    if (found) return found;
  }
  return null;
}

/** The same checks on values that come from elsewhere (multipart fields, CSV cells, query strings). */
export function findUnstorable(value: unknown, where: string): string | null {
  if (typeof value === 'string') {
    const problem = unstorableText(value);
    return problem ? `${where} ${problem}` : null;
  }
  if (typeof value === 'number') return Number.isFinite(value) ? null : `${where} is not a finite number`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const found = findUnstorable(value[i], `${where}[${i}]`);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key === '__proto__') return `${where} has the key "__proto__", which is not allowed`;
      const problem = unstorableText(key);
      if (problem) return `${where} has a key that ${problem}`;
      const found = findUnstorable(inner, `${where}.${key}`);
      if (found) return found;
    }
  }
  return null;
}
