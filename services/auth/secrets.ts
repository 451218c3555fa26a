import crypto from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(crypto.scrypt) as (password: string, salt: Buffer, keylen: number, options: crypto.ScryptOptions) => Promise<Buffer>;

/** SHA-256 hex of a high-entropy token (refresh tokens, link tokens, OAuth states and codes). */
export function sha256(token: string): string {
  return crypto.createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A random URL-safe token with a prefix, `bytes` bytes of entropy. */
export function randomToken(prefix: string, bytes = 32): string {
  return `${prefix}${crypto.randomBytes(bytes).toString('base64url')}`;
}

/** Six decimal digits, uniformly drawn. */
export function sixDigitCode(): string {
  return String(crypto.randomInt(0, 1_000_000)).padStart(6, '0');
}

/**
 * Emailed codes have a million values: a plain hash would be reversed at once from a leaked table, so
 * they are stored as an HMAC under a server secret, bound to their challenge.
 */
export function codeDigest(secret: string, challengeId: string, code: string): string {
  return crypto.createHmac('sha256', secret).update(`${challengeId}:${code}`, 'utf8').digest('hex');
}

export function sameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && crypto.timingSafeEqual(left, right);
}

// OWASP's scrypt floor (N=2^17, r=8, p=1); the parameters travel with the hash so they can be raised later.
const SCRYPT = { N: 2 ** 17, r: 8, p: 1, keylen: 32, maxmem: 256 * 1024 * 1024 };

/** `scrypt$N$r$p$salt$hash` (base64url). */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(16);
  const hash = await scrypt(password.normalize('NFKC'), salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p, maxmem: SCRYPT.maxmem });
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** A stored hash that matches no password: verifying against it costs what a real check costs. */
let decoy: Promise<string> | null = null;

/**
 * Checks a password against its stored hash in constant time. Without a stored hash (unknown
 * address) it still runs one scrypt, so that timing does not tell known staff addresses apart.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const target = stored ?? (await (decoy ??= hashPassword(crypto.randomBytes(16).toString('hex'))));
  const [scheme, n, r, p, salt, hash] = target.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(password.normalize('NFKC'), Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return crypto.timingSafeEqual(actual, expected) && stored !== null;
}
