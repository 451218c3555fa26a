export type SeriesErrorCode =
  | 'TOO_SHORT'
  | 'IRREGULAR_INTERVAL'
  | 'DUPLICATE_TIMESTAMP'
  | 'NON_NUMERIC_TARGET'
  | 'VALUE_OUT_OF_RANGE'
  | 'UNPARSEABLE_TIMESTAMP'
  | 'MISSING_COLUMN'
  | 'HORIZON_INVALID'
  | 'QUANTILE_INVALID'
  | 'SEASON_LENGTH_INVALID';

/** A refusal of the caller's input: names the series (null for a single series) and the reason. */
export class SeriesError extends Error {
  readonly code: SeriesErrorCode;
  readonly seriesId: string | null;

  constructor(code: SeriesErrorCode, message: string, seriesId: string | null = null) {
    super(seriesId === null ? message : `series "${seriesId}": ${message}`);
    this.name = 'SeriesError';
    this.code = code;
    this.seriesId = seriesId;
  }
}
