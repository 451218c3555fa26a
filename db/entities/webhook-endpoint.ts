import { EntitySchema } from '@mikro-orm/core';
import type { WebhookEventType } from '../../config/webhooks';
import type { Workspace } from './workspace';

/**
 * An outgoing webhook endpoint of a workspace. The signing secret is kept encrypted (AES-256-GCM with
 * the key from configuration), never in clear; during a rotation's overlap the previous secret signs
 * too. `events` null means every event kind, including kinds added later.
 */
export interface WebhookEndpoint {
  id: string;
  workspace: Workspace;
  url: string;
  events: WebhookEventType[] | null;
  active: boolean;
  secretCiphertext: string;
  previousSecretCiphertext: string | null;
  previousSecretExpiresAt: Date | null;
  lastSuccessAt: Date | null;
  /**
   * First failed attempt since the last success, or since a quiet spell (WEBHOOKS.failureGapRestartsMs
   * without a failed attempt): the clock of the 5-day disable rule.
   */
  failingSince: Date | null;
  /** The last failed attempt (its scheduled time). */
  lastFailureAt: Date | null;
  disabledReason: string | null;
  disabledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const WebhookEndpointSchema = new EntitySchema<WebhookEndpoint>({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  uniques: [{ name: 'webhook_endpoints_workspace_url_unique', properties: ['workspace', 'url'] }],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    workspace: { kind: 'm:1', entity: 'Workspace', deleteRule: 'cascade' },
    url: { type: 'string', length: 2048 },
    events: { type: 'json', nullable: true },
    active: { type: 'boolean', default: true },
    secretCiphertext: { type: 'text' },
    previousSecretCiphertext: { type: 'text', nullable: true },
    previousSecretExpiresAt: { type: 'datetime', nullable: true },
    lastSuccessAt: { type: 'datetime', nullable: true },
    failingSince: { type: 'datetime', nullable: true },
    lastFailureAt: { type: 'datetime', nullable: true },
    disabledReason: { type: 'string', length: 300, nullable: true },
    disabledAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()', onUpdate: () => new Date() },
  },
});
