import type { ZodType } from 'zod';
import { zodToAppError } from '../api/middleware/errors';
import { requestFingerprint } from './idempotency';
import { parseJsonBytes } from './json';

/**
 * A route's large JSON body read on an engine thread as the API reads a small one: the parser's checks,
 * the route's schema (its refusal in the route's `code`), and the Idempotency-Key fingerprint of the
 * parsed value (the same as the same JSON sent small). The one first step of every staged body
 * (prediction-body.ts, training-body.ts, validation-body.ts, series-body.ts).
 */
export function readStagedJson<T>(bytes: Uint8Array, schema: ZodType<T>, request: { method: string; path: string }, code?: string): { body: T; fingerprint: string } {
  const value = parseJsonBytes(bytes);
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodToAppError(parsed.error, 'body', code);
  return { body: parsed.data, fingerprint: requestFingerprint({ method: request.method, path: request.path, body: value, file: null }) };
}
