import { EntitySchema } from '@mikro-orm/core';
import type { Workspace } from './workspace';

export const API_KEY_KINDS = ['api', 'admin'] as const;
export type ApiKeyKind = (typeof API_KEY_KINDS)[number];
export const REVOKE_REASONS = ['deleted', 'rotated', 'expired'] as const;
export type RevokeReason = (typeof REVOKE_REASONS)[number];

/**
 * An API key. The secret itself is never stored: only its SHA-256 (keys are 190-bit random, so a
 * fast hash is enough) plus a display prefix and the last four characters.
 *
 * Life cycle: active → ending (`endsAt` set by a rotation with grace) → revoked (`revokedAt` set by
 * delete, by the grace workflow, by an immediate rotation, or by the expiry sweep).
 */
export interface ApiKey {
  id: string;
  workspace: Workspace;
  kind: ApiKeyKind;
  name: string;
  secretHash: string;
  displayPrefix: string;
  lastFour: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  endsAt: Date | null;
  revokedAt: Date | null;
  revokeReason: RevokeReason | null;
  rotatedFrom: ApiKey | null;
  /** The API key that made the rotation creating this key; null when a web session made it. */
  rotatedByKeyId: string | null;
  rotatedAt: Date | null;
}

export const ApiKeySchema = new EntitySchema<ApiKey>({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    workspace: { kind: 'm:1', entity: 'Workspace', deleteRule: 'cascade', index: true },
    kind: { type: 'string', length: 10 },
    name: { type: 'string', length: 200 },
    secretHash: { type: 'string', length: 64, unique: true },
    displayPrefix: { type: 'string', length: 40 },
    lastFour: { type: 'string', length: 4 },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    lastUsedAt: { type: 'datetime', nullable: true },
    expiresAt: { type: 'datetime', nullable: true, index: true },
    endsAt: { type: 'datetime', nullable: true },
    revokedAt: { type: 'datetime', nullable: true },
    revokeReason: { type: 'string', length: 20, nullable: true },
    rotatedFrom: { kind: 'm:1', entity: 'ApiKey', nullable: true, deleteRule: 'set null' },
    rotatedByKeyId: { type: 'string', length: 40, nullable: true },
    rotatedAt: { type: 'datetime', nullable: true },
  },
});
