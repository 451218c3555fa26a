import { AppError } from './errors';

/**
 * Parses a JSON request body with the checks a plain JSON.parse lacks, so that what reaches the
 * routes is storable and unambiguous:
 * - NUL characters in keys or strings are refused (PostgreSQL cannot store them in text or jsonb);
 * - numbers that overflow to ±Infinity (`1e999`) are refused (they would become targets and features);
 * - `__proto__` keys are refused (they would alter an object's prototype in code that copies rows).
 * Each refusal is a 400 VALIDATION_ERROR naming where it was found; malformed text is INVALID_JSON.
 */
export function parseJsonBody(text: string): unknown {
  // Fast path: one plain parse when the text cannot hold any of the three. A NUL can only be written
  // as an escape and "__proto__" either plainly or with escapes (all of the form \u00xx here); an
  // overflowing number needs an exponent of 3+ digits or 309+ digits.
  const suspicious = text.includes('\\u00') || text.includes('"__proto__"') || /[eE][+]?\d{3}|\d{309}/.test(text);
  if (!suspicious) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new AppError('INVALID_JSON', 400, 'The request body is not valid JSON.');
    }
  }
  let problem: string | null = null;
  let value: unknown;
  try {
    value = JSON.parse(text, function reviver(this: unknown, key: string, v: unknown) {
      if (problem) return v;
      if (key === '__proto__') problem = 'the key "__proto__" is not allowed';
      else if (key.includes('\u0000')) problem = `the key ${JSON.stringify(key)} holds a NUL character`;
      else if (typeof v === 'string' && v.includes('\u0000')) problem = `the value of ${JSON.stringify(key)} holds a NUL character`;
      else if (typeof v === 'number' && !Number.isFinite(v)) problem = `the number of ${JSON.stringify(key)} is out of range (not finite)`;
      return v;
    });
  } catch {
    throw new AppError('INVALID_JSON', 400, 'The request body is not valid JSON.');
  }
  if (problem) throw new AppError('VALIDATION_ERROR', 400, `Invalid body: ${problem}.`);
  return value;
}

/** The same checks on values that come from elsewhere (multipart fields, CSV cells, query strings). */
export function findUnstorable(value: unknown, where: string): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? `${where} holds a NUL character` : null;
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
      if (key.includes('\u0000')) return `${where} has a key holding a NUL character`;
      const found = findUnstorable(inner, `${where}.${key}`);
      if (found) return found;
    }
  }
  return null;
}
