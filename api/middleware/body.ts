import fs from 'node:fs/promises';
import type { Context } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import type { File } from 'formidable';
import { PLANS, type PlanName } from '../../config/plans';
import { AppError } from '../../services/errors';
import type { AppConfig } from '../../config/env';

export type BodyKind = 'none' | 'json' | 'dataset';

export interface UploadedFile {
  name: string | null;
  mimetype: string | null;
  content: Buffer;
}

const PARSED_METHODS = [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE];

function isTooLarge(err: unknown): boolean {
  const e = err as { status?: number; statusCode?: number; httpCode?: number; code?: number } | null;
  return e?.status === 413 || e?.statusCode === 413 || e?.httpCode === 413 || e?.code === 1009 || e?.code === 1016;
}

async function runParser(ctx: Context, parser: ReturnType<typeof koaBody>): Promise<void> {
  await parser(ctx, async () => undefined);
}

/**
 * Reads the body of a route after authentication, with the limits of the caller's plan for dataset
 * routes (JSON rows, or one CSV/JSON file in multipart `file`). Oversized bodies answer the contract's
 * codes: DATASET_TOO_LARGE (JSON), FILE_TOO_LARGE (upload), PAYLOAD_TOO_LARGE (other routes).
 */
export async function readBody(ctx: Context, kind: BodyKind, config: AppConfig, plan: PlanName | null): Promise<UploadedFile | null> {
  if (kind === 'none') return null;
  if (kind === 'json') {
    await runParser(ctx, koaBody({ json: true, jsonStrict: true, jsonLimit: config.JSON_BODY_LIMIT_BYTES, text: false, urlencoded: false, multipart: false, parsedMethods: PARSED_METHODS }));
    return null;
  }
  const limits = PLANS[plan ?? 'free'];
  const multipart = Boolean(ctx.is('multipart/form-data'));
  try {
    await runParser(
      ctx,
      koaBody({
        json: true,
        jsonStrict: true,
        jsonLimit: limits.maxDatasetBytes,
        text: false,
        urlencoded: false,
        multipart: true,
        parsedMethods: PARSED_METHODS,
        formidable: { maxFiles: 1, maxFileSize: limits.maxFileBytes, maxTotalFileSize: limits.maxFileBytes, allowEmptyFiles: false },
      }),
    );
  } catch (err) {
    if (isTooLarge(err)) {
      throw multipart
        ? new AppError('FILE_TOO_LARGE', 413, `The uploaded file is larger than the ${Math.round(limits.maxFileBytes / 1048576)} MiB your plan accepts.`)
        : new AppError('DATASET_TOO_LARGE', 413, `The dataset is larger than the ${Math.round(limits.maxDatasetBytes / 1048576)} MiB your plan accepts; send it as a file or in parts.`);
    }
    if (multipart) throw new AppError('CSV_UNREADABLE', 400, 'The multipart body could not be read.');
    throw err;
  }
  const files = ctx.request.files;
  if (!files) return null;
  const names = Object.keys(files);
  const unexpected = names.filter((n) => n !== 'file');
  if (unexpected.length > 0) throw new AppError('VALIDATION_ERROR', 400, `Unknown file field ${unexpected[0]}: send the dataset in the multipart field "file".`);
  const entry = files.file;
  const file: File | undefined = Array.isArray(entry) ? entry[0] : entry;
  if (!file) return null;
  try {
    return { name: file.originalFilename ?? null, mimetype: file.mimetype ?? null, content: await fs.readFile(file.filepath) };
  } finally {
    await fs.rm(file.filepath, { force: true });
  }
}
