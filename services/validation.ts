import { checkValidationRows, type Row } from './datasets';
import type { EnginePool, UploadedFileBytes } from './engine-pool';
import type { FreeCall } from './free-work';
import type { ValidationReport, ValidationRequest } from './validation-rows';

/**
 * The free trial run of a validation's rows or file (services/validation-rows.ts validateRows, on an
 * engine thread, as free work). The checks that need no engine (the engine named, the plan's rows) are
 * made here first, so that they answer before the free call waits for a thread.
 */
export async function validateDataset(pool: EnginePool, source: { rows: Row[] } | { file: UploadedFileBytes }, request: ValidationRequest, call: FreeCall): Promise<ValidationReport> {
  if ('file' in source) return pool.validateFile(call, source.file, request);
  checkValidationRows(request.plan, request.engine, source.rows.length);
  return pool.validate(call, source.rows, request);
}
