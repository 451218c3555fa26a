/**
 * The one error family of the service. Routes, services and activities throw AppError; the HTTP
 * error middleware is the single place that turns it into the contract's envelope.
 */
export class AppError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {},
    /** What went wrong underneath (logged for 5xx answers, never sent). */
    cause?: unknown,
  ) {
    super(`${code}: ${detail}`, cause === undefined ? undefined : { cause });
    this.name = 'AppError';
  }
}

/** An AppError as it crosses a thread boundary (errors are cloned without their class). */
export interface CarriedError {
  code: string;
  status: number;
  detail: string;
  extra: Record<string, unknown>;
}

export const carriedError = (err: AppError): CarriedError => ({ code: err.code, status: err.status, detail: err.detail, extra: err.extra });

/** The AppError a thread carried across as a value. */
export const fromCarried = (err: CarriedError): AppError => new AppError(err.code, err.status, err.detail, err.extra);

export const notFound = (what: string): AppError => new AppError('NOT_FOUND', 404, `${what} was not found.`);

/** A model version whose artefact this engine build cannot load (the thread's `unservable` reason). */
export const unservableVersion = (reason: string): AppError =>
  new AppError('ENGINE_MISMATCH', 409, `This model version cannot be served by the current engine (${reason}); refresh the model to retrain it.`);

export const validationError = (detail: string, errors?: Array<{ path: string; message: string }>): AppError =>
  new AppError('VALIDATION_ERROR', 400, detail, errors ? { errors } : {});

interface PgError {
  code?: string;
  constraint?: string;
  detail?: string;
}

/**
 * Translates PostgreSQL errors that carry domain meaning (unique and foreign-key violations) into
 * AppErrors; anything else is returned unchanged for the generic 500 path.
 */
export function mapDatabaseError(err: unknown, conflicts: Record<string, AppError> = {}): unknown {
  const pg = (err as { original?: PgError } | null)?.original ?? (err as PgError | null);
  if (!pg || typeof pg !== 'object') return err;
  if (pg.code === '23505') {
    const known = pg.constraint ? conflicts[pg.constraint] : undefined;
    return known ?? new AppError('CONFLICT', 409, 'The resource already exists.');
  }
  if (pg.code === '23503') return new AppError('CONFLICT', 409, 'A referenced resource does not exist.');
  return err;
}

/** Whether `err` is a unique violation of the named constraint (a race that lost to an equal write). */
export function isUniqueViolation(err: unknown, constraint: string): boolean {
  const pg = (err as { original?: PgError } | null)?.original ?? (err as PgError | null);
  return !!pg && typeof pg === 'object' && pg.code === '23505' && pg.constraint === constraint;
}

const UNAVAILABLE_NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Whether an unexpected error means a dependency (PostgreSQL, Temporal) is unreachable or restarting:
 * the caller gets a clear 503 to retry, not a 500. PostgreSQL classes 08 (connection), 57P0x (shut
 * down), 53 (insufficient resources); pool acquisition timeouts; gRPC UNAVAILABLE (14) and
 * DEADLINE_EXCEEDED (4) from Temporal.
 */
export function isDependencyUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    const x = e as { code?: unknown; message?: unknown; name?: unknown };
    const code = typeof x.code === 'string' ? x.code : typeof x.code === 'number' ? x.code : undefined;
    if (typeof code === 'string' && (UNAVAILABLE_NETWORK_CODES.has(code) || code.startsWith('08') || code.startsWith('57P0') || code.startsWith('53'))) return true;
    if (typeof code === 'number' && (code === 14 || code === 4) && (x.name === 'ServiceError' || String(x.message ?? '').includes('UNAVAILABLE') || String(x.message ?? '').includes('DEADLINE'))) return true;
    const message = String(x.message ?? '');
    if (/Timeout acquiring a connection|Connection terminated|terminating connection|connect ECONNREFUSED|Client has encountered a connection error|Connection lost/i.test(message)) return true;
    if (x.name === 'ServiceError' && /UNAVAILABLE|DEADLINE_EXCEEDED|failed to connect/i.test(message)) return true;
  }
  return false;
}

/**
 * A value of the client's as an error's sentence quotes it: its JSON, cut to `max` characters. The
 * client has it whole; a sentence that echoed a 100,000-character cell in full (twice, with `errors`)
 * answered a request with twice its size (an eleventh probe).
 */
export function quoted(value: unknown, max = 100): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
