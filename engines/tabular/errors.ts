export type TabularErrorCode =
  | 'TARGET_MISSING'
  | 'TOO_FEW_ROWS'
  | 'TOO_FEW_TARGET_VALUES'
  | 'TARGET_NOT_NUMERIC'
  | 'TARGET_OUT_OF_RANGE'
  | 'TARGET_NOT_EXACT'
  | 'TOO_MANY_CLASSES'
  | 'CLASS_LABEL_TOO_LONG'
  | 'COLUMN_NAME_TOO_LONG'
  | 'TOO_MANY_COLUMNS'
  | 'COLUMN_NAMES_TOO_LONG'
  | 'NO_USABLE_FEATURES'
  | 'INVALID_OPTIONS';

/** Typed refusal raised by the engine when a dataset cannot be used. `code` is stable, `message` readable. */
export class TabularDataError extends Error {
  readonly code: TabularErrorCode;
  constructor(code: TabularErrorCode, message: string) {
    super(message);
    this.name = 'TabularDataError';
    this.code = code;
  }
}

/** Raised when a serialised model cannot be loaded (unknown format version, corrupt data). */
export class TabularModelFormatError extends Error {
  readonly code = 'MODEL_FORMAT_UNSUPPORTED';
  constructor(message: string) {
    super(message);
    this.name = 'TabularModelFormatError';
  }
}
