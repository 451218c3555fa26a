import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { AppConfig } from '../../config/env';

const SECRET_PREFIX = 'whsec_';
const FORMAT = 'v1';

/** A new signing secret: `whsec_` + base64 of 32 random bytes (the Standard Webhooks form). */
export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/**
 * Encrypts and decrypts webhook secrets at rest (AES-256-GCM, a fresh 12-byte nonce per secret).
 * Signing needs the secret itself, so it cannot be hashed like API keys; a database dump without the
 * key reveals none.
 */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('The webhook secrets key must be 32 bytes.');
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [FORMAT, iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
  }

  open(sealed: string): string {
    const [format, iv, tag, body] = sealed.split(':');
    if (format !== FORMAT || !iv || !tag || body === undefined) throw new Error('Unreadable sealed webhook secret.');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }
}

/**
 * The key from WEBHOOK_SECRETS_KEY; outside production, when unset, one generated at first use and
 * kept under DATA_DIR, so that every process of a development machine (and the tests' spawned
 * workers) reads the same key. Production without the variable refuses to start.
 */
export function loadSecretBox(config: Pick<AppConfig, 'WEBHOOK_SECRETS_KEY' | 'NODE_ENV' | 'DATA_DIR'>): SecretBox {
  if (config.WEBHOOK_SECRETS_KEY) return new SecretBox(Buffer.from(config.WEBHOOK_SECRETS_KEY, 'base64'));
  if (config.NODE_ENV === 'production') throw new Error('WEBHOOK_SECRETS_KEY is required in production (base64 of 32 bytes).');
  const file = path.join(config.DATA_DIR, 'webhook-secrets.key');
  fs.mkdirSync(config.DATA_DIR, { recursive: true });
  if (!fs.existsSync(file)) {
    // Written aside then linked into place: a process starting at the same moment sees either no key
    // or the whole key, and the first link wins.
    const draft = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(draft, randomBytes(32).toString('base64'), { mode: 0o600 });
    try {
      fs.linkSync(draft, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.rmSync(draft, { force: true });
    }
  }
  return new SecretBox(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64'));
}
