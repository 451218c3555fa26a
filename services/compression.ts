import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';

// Asynchronous zlib: the (de)compression of contexts and artefacts, megabytes at a time, runs on
// libuv's thread pool instead of blocking the event loop of the API or the worker.
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

export const gzipText = (text: string): Promise<Buffer> => gzipAsync(Buffer.from(text, 'utf8'), { level: 6 });
export const gunzipText = async (data: Buffer): Promise<string> => (await gunzipAsync(data)).toString('utf8');
export const gzipJson = (value: unknown): Promise<Buffer> => gzipText(JSON.stringify(value));
export const gunzipJson = async <T>(data: Buffer): Promise<T> => JSON.parse(await gunzipText(data)) as T;
