import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// CSPRNG bytes drawn 8 KiB at a time (as nanoid does): a 1,000-row prediction makes 1,000 ids, and one
// call into the CSPRNG per id cost more than the rest of the id.
const pool = Buffer.alloc(8192);
let poolOffset = pool.length;

function nextByte(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++]!;
}

/** Uniform base62 string from the CSPRNG (rejection sampling keeps every character equally likely). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = nextByte();
    if (byte < 248) out += ALPHABET[byte % 62];
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
  session: 'ses_',
  refreshToken: 'rtk_',
  challenge: 'chl_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** Opaque, random (never sequential) identifier with the kind's prefix: 22 base62 chars ≈ 131 bits. */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}${randomBase62(22)}`;
}
