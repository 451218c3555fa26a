import { ApiError } from '../api/errors';

/**
 * A fresh Idempotency-Key. `crypto.randomUUID` exists only in secure contexts (https, loopback); a
 * console reached over plain http on another address still gets a random key.
 */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Whether a failed call may have run on the service and is worth retrying with the same key (the contract's retry guidance). */
export function retryable(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  return err.status === 0 || err.status === 429 || err.status >= 500 || err.code === 'REQUEST_IN_PROGRESS';
}

/**
 * One Idempotency-Key per logical call, as the contract asks: a retry of the same call (same content,
 * after a lost answer, a 5xx or REQUEST_IN_PROGRESS) reuses the key, so the service replays what it
 * already did (a trained model, a charged score) instead of doing it again; a call with other content,
 * or after a definitive answer, gets a new key.
 */
export class RetryKey {
  private held: { fingerprint: string; key: string } | null = null;

  constructor(private readonly make: () => string = newIdempotencyKey) {}

  /** The key of a call with this content. */
  keyFor(fingerprint: string): string {
    if (this.held?.fingerprint !== fingerprint) this.held = { fingerprint, key: this.make() };
    return this.held.key;
  }

  /** After the call: `null` when it succeeded, else its error. Only an undecided failure keeps the key for the retry. */
  settle(error: unknown): void {
    if (error === null || !retryable(error)) this.held = null;
  }
}
