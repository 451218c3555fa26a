import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z, type ZodType } from 'zod';
import { AppError } from '../services/errors';
import { parseJsonBody } from '../services/json';
import { toNumber } from '../engines/tabular/schema';

// Adds `.openapi()` to zod schemas once, before any schema is declared, so that the schemas which
// validate requests are also the source of the OpenAPI document.
extendZodWithOpenApi(z);

export { z };

interface DefLike {
  type: string;
  innerType?: ZodType;
  element?: ZodType;
  shape?: Record<string, ZodType>;
  in?: ZodType;
  out?: ZodType;
}

const defOf = (schema: ZodType): DefLike => (schema as unknown as { def: DefLike }).def;

/** The kind a field expects once optional/default/nullable wrappers are peeled. */
export function fieldKind(schema: ZodType): { kind: string; element?: string } {
  let def = defOf(schema);
  for (;;) {
    if ((def.type === 'optional' || def.type === 'default' || def.type === 'nullable' || def.type === 'prefault') && def.innerType) def = defOf(def.innerType);
    // a preprocess step (datasetRowsSchema) expects what its output schema expects
    else if (def.type === 'pipe' && def.in && def.out && defOf(def.in).type === 'transform') def = defOf(def.out);
    else break;
  }
  if (def.type === 'array' && def.element) return { kind: 'array', element: fieldKind(def.element).kind };
  return { kind: def.type };
}

/**
 * Multipart form fields are text by nature: read "6", "true" or "0.1,0.9" (or "[0.1,0.9]") as the
 * number, boolean or list the body schema expects, before the same schema validates them. Numeric text
 * is decimal as the engine reads it ("0x6", "0b11" stay text and are refused). JSON bodies
 * are never coerced: a JSON string where the contract says integer is refused. A list written as JSON
 * (`rows`, `data`, `outcomes`, `quantiles`) is read by the JSON body's parser, with its refusals (NUL,
 * lone surrogates, `__proto__`, numbers out of range, depth): a plain JSON.parse let a `\u0000` in a
 * multipart `rows` field through to the shared charge statement, which failed with 500.
 */
export function coerceFormFields(schema: ZodType | undefined, fields: unknown): unknown {
  if (!schema || !fields || typeof fields !== 'object' || Array.isArray(fields)) return fields;
  const shape = defOf(schema).shape;
  if (!shape) return fields;
  const out: Record<string, unknown> = { ...(fields as Record<string, unknown>) };
  for (const [name, raw] of Object.entries(out)) {
    // own keys only: a field named `constructor` found Object's constructor in the shape and failed with 500
    const field = Object.hasOwn(shape, name) ? shape[name] : undefined;
    if (!field || typeof raw !== 'string') continue;
    const text = raw.trim();
    const { kind, element } = fieldKind(field);
    // numeric text by the engine's rule (as outcomes and features are read), not Number(): "0x6" was 6
    const asNumber = (t: string): unknown => {
      const value = toNumber(t);
      return Number.isFinite(value) ? value : t;
    };
    if (kind === 'number') out[name] = asNumber(text);
    else if (kind === 'boolean') out[name] = text === 'true' ? true : text === 'false' ? false : raw;
    else if (kind === 'array') {
      let list: unknown = raw;
      if (text.startsWith('[')) {
        try {
          list = parseJsonBody(text);
        } catch (err) {
          // malformed JSON stays text (the schema then says what it expected); a refused value is refused
          if (!(err instanceof AppError) || err.code !== 'INVALID_JSON') throw err;
          list = raw;
        }
      } else list = text === '' ? [] : text.split(',').map((part) => (element === 'number' ? asNumber(part.trim()) : part.trim()));
      out[name] = list;
    }
  }
  return out;
}
