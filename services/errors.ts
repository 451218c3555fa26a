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
  ) {
    super(`${code}: ${detail}`);
    this.name = 'AppError';
  }
}

export const notFound = (what: string): AppError => new AppError('NOT_FOUND', 404, `${what} was not found.`);

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
