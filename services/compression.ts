import { promisify } from 'node:util';
import { gunzip, gunzipSync, gzip, gzipSync } from 'node:zlib';

// Asynchronous zlib: the (de)compression of contexts and artefacts, megabytes at a time, runs on
// libuv's thread pool instead of blocking the event loop of the API or the worker.
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

const GZIP_OPTIONS = { level: 6 };

export const gzipText = (text: string): Promise<Buffer> => gzipAsync(Buffer.from(text, 'utf8'), GZIP_OPTIONS);
export const gunzipText = async (data: Buffer): Promise<string> => (await gunzipAsync(data)).toString('utf8');
export const gzipJson = (value: unknown): Promise<Buffer> => gzipText(JSON.stringify(value));
export const gunzipJson = async <T>(data: Buffer): Promise<T> => JSON.parse(await gunzipText(data)) as T;

// The same bytes and values, synchronously: for engine threads, whose work is allowed to block them.
export const gzipJsonSync = (value: unknown): Buffer => gzipSync(Buffer.from(JSON.stringify(value), 'utf8'), GZIP_OPTIONS);
export const gunzipJsonSync = <T>(data: Uint8Array): T => JSON.parse(gunzipSync(data).toString('utf8')) as T;
