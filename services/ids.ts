import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform base62 string from the CSPRNG (rejection sampling keeps every character equally likely). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const ID_PREFIXES = {
  account: 'acc_',
  workspace: 'ws_',
  apiKey: 'key_',
  model: 'mdl_',
  version: 'ver_',
  webhook: 'whk_',
  request: 'req_',
  purchase: 'pur_',
  event: 'evt_',
  delivery: 'dlv_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** Opaque, random (never sequential) identifier with the kind's prefix: 22 base62 chars ≈ 131 bits. */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}${randomBase62(22)}`;
}
