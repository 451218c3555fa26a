import { gunzipSync, gzipSync } from 'node:zlib';

export const gzipJson = (value: unknown): Buffer => gzipSync(Buffer.from(JSON.stringify(value), 'utf8'), { level: 6 });
export const gunzipJson = <T>(data: Buffer): T => JSON.parse(gunzipSync(data).toString('utf8')) as T;
export const gzipText = (text: string): Buffer => gzipSync(Buffer.from(text, 'utf8'), { level: 6 });
export const gunzipText = (data: Buffer): string => gunzipSync(data).toString('utf8');
