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
  /** outcomes from 2026-11-25 on; earlier ones kept the `evt_` of ledger rows and webhook events */
  outcome: 'out_',
  delivery: 'dlv_',
  session: 'ses_',
  refreshToken: 'rtk_',
  challenge: 'chl_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** Characters after an id's prefix. */
const ID_BODY_LENGTH = 22;

/** Opaque, random (never sequential) identifier with the kind's prefix: 22 base62 chars ≈ 131 bits. */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}${randomBase62(ID_BODY_LENGTH)}`;
}

/** A regular expression (POSIX and JavaScript alike) matching exactly the ids of a kind. */
export function idPattern(kind: IdKind): string {
  return `^${ID_PREFIXES[kind]}[0-9A-Za-z]{${ID_BODY_LENGTH}}$`;
}

/** Row positions within a run of ids: 4 base62 digits, enough for 14.7 million rows. */
const RUN_POSITION_DIGITS = 4;

/** The ids of a request run share their first characters: `req_` and 18 random ones (≈ 107 bits). */
export const RUN_STEM_LENGTH = ID_PREFIXES.request.length + ID_BODY_LENGTH - RUN_POSITION_DIGITS;

/**
 * `count` ids of the same shape as newId's that share one random stem and end in their position in 4
 * base62 digits. One paid call's scored rows are stored as one row keyed by the stem, and a row's id
 * (its request_id) finds that row and the position in it (db migration 20261124130000). Knowing one id
 * reveals only its siblings, which belong to the same caller.
 */
export function newIdRun(kind: IdKind, count: number): { stem: string; ids: string[] } {
  if (count > 62 ** RUN_POSITION_DIGITS) throw new RangeError(`a run of ids holds at most ${62 ** RUN_POSITION_DIGITS}`);
  const stem = `${ID_PREFIXES[kind]}${randomBase62(ID_BODY_LENGTH - RUN_POSITION_DIGITS)}`;
  const ids = new Array<string>(count);
  for (let i = 0; i < count; i++) {
    let n = i;
    let digits = '';
    for (let d = 0; d < RUN_POSITION_DIGITS; d++) {
      digits = ALPHABET[n % 62] + digits;
      n = Math.floor(n / 62);
    }
    ids[i] = stem + digits;
  }
  return { stem, ids };
}
