import { STAGED_JSON_FROM_BYTES } from '../../api/middleware/body';
import type { Harness } from './harness';

/** The JSON text with blanks after its first character (still the same JSON value), past the size from which a body is read on an engine thread. */
export const padPastStaging = (text: string): string => `${text.slice(0, 1)}${' '.repeat(STAGED_JSON_FROM_BYTES)}${text.slice(1)}`;

/** `staged_request_bodies_total{outcome}` as /metrics shows it: the bodies and files read on an engine thread, or refused there. */
export async function stagedCount(h: Harness, outcome: 'staged' | 'refused'): Promise<number> {
  const text = (await h.http.get('/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`staged_request_bodies_total{outcome="${outcome}"}`));
  return line ? Number(line.split(' ')[1]) : 0;
}
