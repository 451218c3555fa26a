import crypto from 'node:crypto';

/**
 * The PKCE verifier and the nonce of a redirect in flight are kept in `oauth_states` sealed
 * (AES-256-GCM) under a key derived from the state, and the row is found by the state's SHA-256: the
 * table alone (a backup, a read-only leak) cannot complete anybody's sign-in, and the state alone
 * (it travels in URLs) does not reveal the verifier.
 */
function keyOf(state: string): Buffer {
  return Buffer.from(crypto.hkdfSync('sha256', state, Buffer.alloc(0), 'oauth-state-seal', 32));
}

export function sealWithState(state: string, plain: string): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', keyOf(state), iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
}

/** Throws when `sealed` was not sealed with this state (or was altered). */
export function unsealWithState(state: string, sealed: string): string {
  const raw = Buffer.from(sealed, 'base64url');
  const decipher = crypto.createDecipheriv('aes-256-gcm', keyOf(state), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(raw.length - 16));
  return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8');
}
