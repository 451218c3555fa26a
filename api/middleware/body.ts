import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Context } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import getRawBody from 'raw-body';
import { findUnstorable, parseJsonBytes } from '../../services/json';
import type { File } from 'formidable';
import { PLANS, type PlanName } from '../../config/plans';
import { AppError, validationError } from '../../services/errors';
import type { AppConfig } from '../../config/env';

/**
 * none; json; dataset (JSON rows or one multipart file, plan limits); raw (the bytes as sent, in
 * `upload.content`, unparsed: a signature is checked on exactly them).
 */
export type BodyKind = 'none' | 'json' | 'dataset' | 'raw';

export interface UploadedFile {
  name: string | null;
  mimetype: string | null;
  content: Buffer;
}

const PARSED_METHODS = [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE];

/** Stripe's events are far below this. */
const RAW_BODY_LIMIT_BYTES = 1024 * 1024;

/** formidable's codes for a second file part, too many fields and too many bytes of fields (both sent as 413). */
const FORMIDABLE_MAX_FILES_EXCEEDED = 1015;
const FORMIDABLE_MAX_FIELDS_EXCEEDED = 1007;
const FORMIDABLE_MAX_FIELDS_SIZE_EXCEEDED = 1006;

/**
 * Form fields a multipart body may hold besides its file: the widest route (`POST /v1/forecast`)
 * documents nine, and the bodies are strict, so more than this is refused without reading them.
 */
const MAX_MULTIPART_FIELDS = 50;

function isTooLarge(err: unknown): boolean {
  const e = err as { status?: number; statusCode?: number; httpCode?: number; code?: number } | null;
  return e?.status === 413 || e?.statusCode === 413 || e?.httpCode === 413 || e?.code === 1009 || e?.code === 1016;
}

async function runParser(ctx: Context, parser: ReturnType<typeof koaBody>): Promise<void> {
  await parser(ctx, async () => undefined);
}

function hasBody(ctx: Context): boolean {
  const length = ctx.get('content-length');
  return Boolean(ctx.get('transfer-encoding')) || (length !== '' && length !== '0');
}

/**
 * 415 for a body sent with a content coding, or a transfer coding besides chunked: bodies are read as sent, never inflated. Codings are
 * case-insensitive lists (RFC 9110 §8.4), so `Identity` or `identity, identity` is no coding. A
 * multipart body used to skip the check: gzipped, it was 400 CSV_UNREADABLE ("could not be read").
 */
function refuseContentCoding(ctx: Context): void {
  const codings = (header: string, alsoAllowed: string | null = null) =>
    ctx
      .get(header)
      .split(',')
      .map((c) => c.trim().toLowerCase())
      .filter((c) => c !== '' && c !== 'identity' && c !== alsoAllowed);
  if (codings('content-encoding').length > 0) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 415, 'Compressed request bodies are not accepted; send the body as is.');
  // Node undoes `chunked` only: a body sent `Transfer-Encoding: gzip, chunked` reached the parser
  // still compressed, 400 INVALID_JSON "not valid UTF-8" (an eighteenth probe).
  if (codings('transfer-encoding', 'chunked').length > 0) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 415, 'Transfer codings other than chunked (gzip, deflate…) are not accepted; send the body as is.');
  }
}

/**
 * Reads a JSON body with our own parser (see parseJsonBody). A body of another type is 415, not an
 * empty object; no body at all is `{}` so that routes with only optional fields accept it. A body of
 * `deferFromBytes` or more is answered as its bytes, unparsed (the route reads it off the event loop).
 */
async function readJson(ctx: Context, limit: number, tooLarge: () => AppError, deferFromBytes: number | null = null): Promise<Buffer | null> {
  if (!hasBody(ctx)) {
    ctx.request.body = {};
    return null;
  }
  if (!ctx.is('application/json', '+json')) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 415, `This route reads application/json${ctx.get('content-type') ? `, not ${ctx.get('content-type')}` : ''}.`);
  }
  refuseContentCoding(ctx);
  let raw: Buffer;
  try {
    raw = await getRawBody(ctx.req, { limit, length: ctx.get('content-length') || undefined });
  } catch (err) {
    if (isTooLarge(err)) throw tooLarge();
    throw new AppError('INVALID_JSON', 400, 'The request body could not be read as UTF-8 JSON.');
  }
  if (deferFromBytes !== null && raw.length >= deferFromBytes) return raw;
  ctx.request.body = parseJsonBytes(raw) as typeof ctx.request.body;
  return null;
}

/**
 * A dataset route's JSON body of at least this many bytes is not parsed on the event loop when the
 * route stages it (RouteDef `stagedBody`): 64 MB of rows took 1.8-2.5 s to parse and 0.6 s to validate
 * there, while every other call of the process waited. Smaller bodies cost less than the thread hop.
 */
export const STAGED_JSON_FROM_BYTES = 1024 * 1024;

/** What a route's body was read as: a multipart file, or a large JSON body left unparsed for a thread. */
export interface ReadBody {
  upload: UploadedFile | null;
  /** A dataset route's JSON body of STAGED_JSON_FROM_BYTES or more, as sent (`ctx.request.body` is then unset). */
  largeJson: Buffer | null;
}

const NOTHING_READ: ReadBody = { upload: null, largeJson: null };

/** A route that takes no body reads at most this much of one, enough for `{}` and blanks around it. */
const NO_BODY_LIMIT_BYTES = 1024;

/**
 * A route that takes no body (refresh, archive, restore, the deletions, a webhook test, the portal…)
 * accepts none, blanks, or an empty JSON object (clients, the console among them, send `{}` with
 * every POST); anything else is 400 VALIDATION_ERROR, as an unknown field is on the routes that take
 * one. Such bodies were never read, so an eighteenth probe's refresh sent `{"engine": …}` refreshed on
 * the current engine, and a deletion or a revocation sent with options ran with them ignored. Bodies
 * of GET and HEAD have no meaning (RFC 9110 §9.3.1) and are left unread.
 */
async function refuseBody(ctx: Context): Promise<void> {
  if (ctx.method === 'GET' || ctx.method === 'HEAD' || !hasBody(ctx)) return;
  const refused = () => new AppError('VALIDATION_ERROR', 400, 'This route takes no body; send none (or {}).', { errors: [{ path: 'body', message: 'This route takes no body; send none (or {}).' }] });
  let raw: Buffer;
  try {
    raw = await getRawBody(ctx.req, { limit: NO_BODY_LIMIT_BYTES, length: ctx.get('content-length') || undefined });
  } catch (err) {
    if (isTooLarge(err)) throw new AppError('PAYLOAD_TOO_LARGE', 413, 'This route takes no body.');
    throw refused();
  }
  const text = raw.toString('utf8').trim();
  if (text === '') return;
  if (!/^\{\s*\}$/.test(text)) throw refused();
}

/**
 * Reads the body of a route after authentication, with the limits of the caller's plan for dataset
 * routes (JSON rows, or one CSV/JSON file in multipart `file`). Oversized bodies answer the contract's
 * codes: DATASET_TOO_LARGE (JSON), FILE_TOO_LARGE (upload), PAYLOAD_TOO_LARGE (other routes).
 * `stagesLargeJson`: a large JSON body of a dataset route is answered unparsed (`largeJson`).
 */
export async function readBody(ctx: Context, kind: BodyKind, config: AppConfig, plan: PlanName | null, stagesLargeJson = false): Promise<ReadBody> {
  if (kind === 'none') {
    await refuseBody(ctx);
    return NOTHING_READ;
  }
  if (kind === 'raw') {
    try {
      const content = await getRawBody(ctx.req, { limit: RAW_BODY_LIMIT_BYTES, length: ctx.get('content-length') || undefined });
      return { upload: { name: null, mimetype: ctx.get('content-type') || null, content }, largeJson: null };
    } catch (err) {
      if (isTooLarge(err)) throw new AppError('PAYLOAD_TOO_LARGE', 413, 'The request body is larger than this route accepts.');
      throw new AppError('INVALID_JSON', 400, 'The request body could not be read.');
    }
  }
  if (kind === 'json') {
    await readJson(ctx, config.JSON_BODY_LIMIT_BYTES, () => new AppError('PAYLOAD_TOO_LARGE', 413, 'The request body is larger than this route accepts.'));
    return NOTHING_READ;
  }
  const limits = PLANS[plan ?? 'free'];
  const multipart = Boolean(ctx.is('multipart/form-data'));
  if (multipart && hasBody(ctx)) refuseContentCoding(ctx);
  if (!multipart) {
    const largeJson = await readJson(
      ctx,
      limits.maxDatasetBytes,
      () => new AppError('DATASET_TOO_LARGE', 413, `The dataset is larger than the ${Math.round(limits.maxDatasetBytes / 1048576)} MiB your plan accepts; send it as a file or in parts.`),
      stagesLargeJson ? STAGED_JSON_FROM_BYTES : null,
    );
    return { upload: null, largeJson };
  }
  // Every file of this request is written in a directory of its own, removed once the body is read
  // whatever happened: a refused upload (a file in another field than `file`, a second file, a field
  // PostgreSQL cannot store) left its file in the system's temporary directory for good, so anyone
  // with a key could fill the disk one refused 50 MiB upload at a time (a seventh probe). It is removed
  // again when the exchange ends, for a file the parser opened after the first removal.
  const uploadDir = await fs.mkdtemp(path.join(os.tmpdir(), 'upload-'));
  const removeUploads = () => fs.rm(uploadDir, { recursive: true, force: true, maxRetries: 2 });
  ctx.res.once('close', () => void removeUploads().catch(() => undefined));
  try {
    return { upload: await readMultipart(ctx, limits, uploadDir), largeJson: null };
  } finally {
    await removeUploads().catch(() => undefined);
  }
}

/**
 * A part named `__proto__` is given to formidable under this name instead: formidable collects fields
 * with `fields[name] = [value]`, so a field named `__proto__` replaced the prototype of the object of
 * fields, and its value came back as a field named "0" (a ninth probe). A symbol is read, counted and
 * held to the limits like any field, and never copied into the body (koa-body copies string keys).
 */
const REFUSED_FIELD_NAME = Symbol('refused multipart field name');
const REFUSED_FIELD_NAMES = new Set(['__proto__']);

async function readMultipart(ctx: Context, limits: (typeof PLANS)[PlanName], uploadDir: string): Promise<UploadedFile | null> {
  let refusedName: string | null = null;
  try {
    await runParser(
      ctx,
      koaBody({
        json: false,
        text: false,
        urlencoded: false,
        multipart: true,
        parsedMethods: PARSED_METHODS,
        // The text fields (rows written as JSON in `data` or `rows` among them) are held to the plan's
        // dataset bytes like a JSON body: formidable's own default (20 MiB) let a free plan's 16 MiB of
        // rows in a `data` field through its 10 MiB limit, and answered larger ones, like a body of
        // more than 1,000 fields, FILE_TOO_LARGE about a file that was a few bytes (an eighth probe).
        formidable: {
          uploadDir,
          maxFiles: 1,
          maxFileSize: limits.maxFileBytes,
          maxTotalFileSize: limits.maxFileBytes,
          allowEmptyFiles: false,
          maxFields: MAX_MULTIPART_FIELDS,
          maxFieldsSize: limits.maxDatasetBytes,
          onPart: (part, handlePart) => {
            if (part.name !== null && REFUSED_FIELD_NAMES.has(part.name)) {
              refusedName ??= part.name;
              (part as { name: unknown }).name = REFUSED_FIELD_NAME;
            }
            handlePart(part);
          },
        },
      }),
    );
  } catch (err) {
    const code = (err as { code?: number } | null)?.code;
    if (code === FORMIDABLE_MAX_FILES_EXCEEDED) {
      throw new AppError('VALIDATION_ERROR', 400, 'Send one file, in the multipart field "file".');
    }
    if (code === FORMIDABLE_MAX_FIELDS_EXCEEDED) {
      throw new AppError('VALIDATION_ERROR', 400, `A multipart body holds at most ${MAX_MULTIPART_FIELDS} form fields besides its file.`);
    }
    if (code === FORMIDABLE_MAX_FIELDS_SIZE_EXCEEDED) {
      throw new AppError('DATASET_TOO_LARGE', 413, `The form fields are larger than the ${Math.round(limits.maxDatasetBytes / 1048576)} MiB your plan accepts; send the rows as a file.`);
    }
    if (isTooLarge(err)) throw new AppError('FILE_TOO_LARGE', 413, `The uploaded file is larger than the ${Math.round(limits.maxFileBytes / 1048576)} MiB your plan accepts.`);
    throw new AppError('CSV_UNREADABLE', 400, 'The multipart body could not be read.');
  }
  if (refusedName !== null) throw new AppError('VALIDATION_ERROR', 400, `A multipart field may not be named "${refusedName}".`);
  // A field sent twice arrived as a list of texts, which the schema then refused in words that named
  // neither the repetition nor the field as sent ("quantiles.0: expected number, received string" for
  // `quantiles=0.1` twice, "rows.0: Expected a row" for two `rows` fields: a ninth probe).
  for (const [name, value] of Object.entries((ctx.request.body ?? {}) as Record<string, unknown>)) {
    if (Array.isArray(value)) {
      throw new AppError('VALIDATION_ERROR', 400, `The multipart field ${JSON.stringify(name.slice(0, 64))} is sent ${value.length} times; send each field once (a list as JSON text such as [0.1, 0.9], or comma-separated).`);
    }
  }
  // A part named `file` without a file name (`curl -F "file=<data.csv"`, `FormData.append("file", text)`)
  // is a text field to formidable, and was refused as 'Unrecognized key: "file"', the one field the
  // route asks for (a thirteenth probe). It is not read as the dataset: a text field is decoded as UTF-8
  // on the way in, so a file in another encoding would lose its characters, where a file part keeps its bytes.
  if (Object.hasOwn((ctx.request.body ?? {}) as object, 'file')) {
    throw validationError(
      'The multipart field "file" arrived as a text field (a part without a file name); send the dataset as a file part with a file name, such as curl -F "file=@data.csv" or FormData.append("file", blob, "data.csv").',
      [{ path: 'body.file', message: 'send the dataset as a file part, with a file name' }],
    );
  }
  const unstorable = findUnstorable(ctx.request.body, 'body');
  if (unstorable) throw new AppError('VALIDATION_ERROR', 400, `Invalid ${unstorable}.`);
  const files = ctx.request.files;
  if (!files) return null;
  const names = Object.keys(files);
  const unexpected = names.filter((n) => n !== 'file');
  if (unexpected.length > 0) throw new AppError('VALIDATION_ERROR', 400, `Unknown file field ${unexpected[0]}: send the dataset in the multipart field "file".`);
  const entry = files.file;
  const file: File | undefined = Array.isArray(entry) ? entry[0] : entry;
  if (!file) return null;
  return { name: file.originalFilename ?? null, mimetype: file.mimetype ?? null, content: await fs.readFile(file.filepath) };
}
