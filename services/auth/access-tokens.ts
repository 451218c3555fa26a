import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import * as jose from 'jose';
import type { AppConfig } from '../../config/env';
import { AppError } from '../errors';

const ALG = 'EdDSA';

export interface AccessClaims {
  accountId: string;
  sessionId: string;
}

export interface SignedAccessToken {
  token: string;
  expiresInSeconds: number;
}

interface DevKeyFile {
  kid: string;
  privateKeyPem: string;
}

/** Outside production a missing key is generated once under DATA_DIR, so sessions survive restarts. */
function devSigningKey(dataDir: string): DevKeyFile {
  const file = path.join(dataDir, 'auth', 'jwt-signing-key.json');
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')) as DevKeyFile;
  const { privateKey } = crypto.generateKeyPairSync('ed25519');
  const created: DevKeyFile = { kid: `dev-${crypto.randomBytes(6).toString('hex')}`, privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // `wx`: two processes starting at once keep whichever key was written first.
  try {
    fs.writeFileSync(file, JSON.stringify(created), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return JSON.parse(fs.readFileSync(file, 'utf8')) as DevKeyFile;
  }
  return created;
}

const invalid = (): AppError => new AppError('TOKEN_INVALID', 401, 'The access token is invalid or has expired; renew it with POST /v1/auth/refresh.');

/**
 * Short-lived access tokens: Ed25519 JWTs with a `kid`, so that a new signing key can be introduced
 * while tokens signed by the previous one (listed in JWT_PREVIOUS_PUBLIC_KEYS) still verify.
 */
export class AccessTokens {
  private constructor(
    private readonly signingKey: crypto.KeyObject,
    private readonly kid: string,
    private readonly verifyKeys: Map<string, crypto.KeyObject>,
    private readonly issuer: string,
    private readonly audience: string,
    private readonly ttlSeconds: number,
  ) {}

  static fromConfig(config: AppConfig): AccessTokens {
    let pem = config.JWT_PRIVATE_KEY;
    let kid = config.JWT_KEY_ID;
    if (!pem) {
      if (config.NODE_ENV === 'production') throw new Error('JWT_PRIVATE_KEY (and JWT_KEY_ID) must be set in production.');
      ({ privateKeyPem: pem, kid } = devSigningKey(config.DATA_DIR));
    }
    if (!kid) throw new Error('JWT_KEY_ID must be set with JWT_PRIVATE_KEY.');
    const signingKey = crypto.createPrivateKey(pem.replace(/\\n/g, '\n'));
    if (signingKey.asymmetricKeyType !== 'ed25519') throw new Error('JWT_PRIVATE_KEY must be an Ed25519 key (PKCS#8 PEM).');
    const verifyKeys = new Map<string, crypto.KeyObject>([[kid, crypto.createPublicKey(signingKey)]]);
    if (config.JWT_PREVIOUS_PUBLIC_KEYS) {
      const jwks = JSON.parse(config.JWT_PREVIOUS_PUBLIC_KEYS) as { keys?: Array<jose.JWK & { kid?: string }> };
      for (const jwk of jwks.keys ?? []) {
        if (!jwk.kid) throw new Error('Every key of JWT_PREVIOUS_PUBLIC_KEYS needs a kid.');
        verifyKeys.set(jwk.kid, crypto.createPublicKey({ key: jwk as crypto.JsonWebKey, format: 'jwk' }));
      }
    }
    return new AccessTokens(signingKey, kid, verifyKeys, config.JWT_ISSUER, config.JWT_AUDIENCE, config.ACCESS_TOKEN_TTL_SECONDS);
  }

  async sign(claims: AccessClaims, now: Date = new Date()): Promise<SignedAccessToken> {
    const issuedAt = Math.floor(now.getTime() / 1000);
    const token = await new jose.SignJWT({ sid: claims.sessionId })
      .setProtectedHeader({ alg: ALG, kid: this.kid, typ: 'at+jwt' })
      .setSubject(claims.accountId)
      .setIssuer(this.issuer)
      .setAudience(this.audience)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + this.ttlSeconds)
      .setJti(crypto.randomUUID())
      .sign(this.signingKey);
    return { token, expiresInSeconds: this.ttlSeconds };
  }

  /** The claims of a valid token; 401 TOKEN_INVALID for anything else (forged, expired, foreign, malformed). */
  async verify(token: string): Promise<AccessClaims> {
    try {
      const { payload } = await jose.jwtVerify(
        token,
        (header) => {
          const key = header.kid ? this.verifyKeys.get(header.kid) : undefined;
          if (!key) throw invalid();
          return key;
        },
        { algorithms: [ALG], issuer: this.issuer, audience: this.audience, typ: 'at+jwt', requiredClaims: ['sub', 'sid', 'exp', 'iat'] },
      );
      if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string') throw invalid();
      return { accountId: payload.sub, sessionId: payload.sid };
    } catch {
      throw invalid();
    }
  }

  /** The public keys that verify access tokens (JWKS), for services that check tokens themselves. */
  publicJwks(): { keys: jose.JWK[] } {
    return {
      keys: [...this.verifyKeys].map(([kid, key]) => ({ ...(key.export({ format: 'jwk' }) as jose.JWK), kid, alg: ALG, use: 'sig' })),
    };
  }
}

/** The HMAC key of emailed codes: from configuration, else (outside production) generated once under DATA_DIR. */
export function authCodeSecret(config: AppConfig): string {
  if (config.AUTH_CODE_SECRET) return config.AUTH_CODE_SECRET;
  if (config.NODE_ENV === 'production') throw new Error('AUTH_CODE_SECRET must be set in production.');
  const file = path.join(config.DATA_DIR, 'auth', 'code-secret');
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    try {
      fs.writeFileSync(file, crypto.randomBytes(32).toString('base64url'), { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  return fs.readFileSync(file, 'utf8').trim();
}
