import { AppError } from '../../services/errors';
import { checkRows, parseUploadedFile, type Row } from '../../services/datasets';
import type { AuthContext } from '../middleware/auth';
import type { UploadedFile } from '../middleware/body';

export function requireAuth(auth: AuthContext | null): AuthContext {
  if (!auth) throw new AppError('AUTH_REQUIRED', 401, 'This route needs credentials.');
  return auth;
}

/** Usage keys predict; administration keys cannot (the contract's separation of duties). */
export function requireUsageKey(auth: AuthContext | null): AuthContext {
  const a = requireAuth(auth);
  if (a.type === 'api_key' && a.keyKind === 'admin') {
    throw new AppError('ADMIN_KEY_CANNOT_PREDICT', 403, 'Administration keys cannot predict; use a usage key (sk-svc-api-…).');
  }
  return a;
}

/** The rows of a dataset route: JSON rows, or the multipart file; exactly one of them. */
export function datasetRows(jsonRows: unknown[] | undefined, upload: UploadedFile | null, field: string): Row[] {
  if (jsonRows !== undefined && upload) throw new AppError('VALIDATION_ERROR', 400, `Send either body.${field} or a file, not both.`);
  if (upload) return parseUploadedFile(upload);
  if (jsonRows === undefined) throw new AppError('VALIDATION_ERROR', 400, `Invalid body.${field}: the rows are missing (send body.${field} or a CSV/JSON file in the multipart field "file").`);
  return checkRows(jsonRows, `body.${field}`);
}
