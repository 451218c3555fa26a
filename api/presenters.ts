import type { SignedIn } from '../services/auth/sign-in';
import type { Profile } from '../services/profile';
import { WEBHOOK_EVENT_TYPES } from '../config/webhooks';
import type { ApiKey, ApiKeyKind, Model, ModelVersion, RevokeReason, WebhookEndpoint, Workspace } from '../db/entities';
import type { AttemptRow, DeliveryRow } from '../services/webhooks/endpoints';
import { keyStatus, type KeyStatus } from '../services/api-keys';

// The contract's shapes of domain values; services never build HTTP bodies.

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export interface KeyView {
  id: string;
  name: string;
  kind: ApiKeyKind;
  status: KeyStatus;
  display_prefix: string;
  last_four: string;
  workspace_id: string;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  ends_at: string | null;
  revoked_at: string | null;
  revoke_reason: RevokeReason | null;
  rotated_from: string | null;
  rotated_at: string | null;
}

export function presentKey(key: ApiKey, now: Date): KeyView {
  return {
    id: key.id,
    name: key.name,
    kind: key.kind,
    status: keyStatus(key, now),
    display_prefix: key.displayPrefix,
    last_four: key.lastFour,
    workspace_id: key.workspace.id,
    created_at: key.createdAt.toISOString(),
    last_used_at: iso(key.lastUsedAt),
    expires_at: iso(key.expiresAt),
    ends_at: iso(key.endsAt),
    revoked_at: iso(key.revokedAt),
    revoke_reason: key.revokeReason,
    rotated_from: key.rotatedFrom ? key.rotatedFrom.id : null,
    rotated_at: iso(key.rotatedAt),
  };
}

export function presentVersion(version: ModelVersion, model: Model) {
  return {
    id: version.id,
    number: version.number,
    engine: { id: version.engineId, version: version.engineVersion },
    format_version: version.formatVersion,
    trigger: version.trigger,
    serving: model.currentVersion === version.number && model.status === 'serving',
    context_rows: version.contextRows,
    outcomes_folded: version.outcomesFolded,
    validation: version.validation,
    ...(model.explain && version.topFactors ? { top_factors: version.topFactors } : {}),
    created_at: version.createdAt.toISOString(),
  };
}

export function presentModel(model: Model, current: ModelVersion | null) {
  return {
    id: model.id,
    name: model.name,
    target: model.target,
    task: model.task,
    engine: model.engineId,
    status: model.status,
    feature_columns: model.featureColumns,
    explain: model.explain,
    auto_update: model.autoUpdate,
    version: current ? presentVersion(current, model) : null,
    versions_count: model.currentVersion ?? 0,
    workspace_id: model.workspace.id,
    created_at: model.createdAt.toISOString(),
    updated_at: model.updatedAt.toISOString(),
    archived_at: iso(model.archivedAt),
  };
}

export function presentTokenPair(pair: SignedIn) {
  return {
    token_type: 'Bearer' as const,
    access_token: pair.accessToken,
    expires_in: pair.expiresInSeconds,
    refresh_token: pair.refreshToken,
    refresh_token_expires_at: pair.refreshExpiresAt.toISOString(),
    account_id: pair.accountId,
    session_id: pair.sessionId,
    account_created: pair.created,
  };
}

export function presentWorkspace(workspace: Workspace) {
  return { id: workspace.id, name: workspace.name, created_at: workspace.createdAt.toISOString(), updated_at: workspace.updatedAt.toISOString() };
}

export function presentProfile({ account, workspaces, identities }: Profile) {
  return {
    id: account.id,
    email: account.email,
    full_name: account.fullName,
    plan: account.plan,
    is_staff: account.isStaff,
    created_at: account.createdAt.toISOString(),
    credits: {
      monthly_allowance: account.monthlyAllowance,
      allowance_remaining: account.allowanceRemaining,
      purchased_balance: account.purchasedBalance,
      remaining: account.allowanceRemaining + account.purchasedBalance,
    },
    workspaces: workspaces.map(presentWorkspace),
    identities: identities.map((i) => ({ provider: i.provider, email: i.email, linked_at: i.createdAt.toISOString() })),
  };
}

export function presentWebhook(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events ?? [...WEBHOOK_EVENT_TYPES],
    all_events: endpoint.events === null,
    active: endpoint.active,
    disabled_reason: endpoint.disabledReason,
    disabled_at: iso(endpoint.disabledAt),
    last_success_at: iso(endpoint.lastSuccessAt),
    failing_since: iso(endpoint.failingSince),
    previous_secret_expires_at: endpoint.previousSecretExpiresAt && endpoint.previousSecretCiphertext ? endpoint.previousSecretExpiresAt.toISOString() : null,
    workspace_id: endpoint.workspace.id,
    created_at: endpoint.createdAt.toISOString(),
    updated_at: endpoint.updatedAt.toISOString(),
  };
}

export function presentDelivery({ delivery, attempts }: { delivery: DeliveryRow; attempts: AttemptRow[] }) {
  return {
    id: delivery.id,
    webhook_id: delivery.endpoint_id,
    event_id: delivery.event_id,
    event_type: delivery.event_type,
    redelivery_of: delivery.redelivery_of,
    state: delivery.state,
    attempt_count: delivery.attempts,
    last_status: delivery.last_status,
    last_error: delivery.last_error,
    created_at: new Date(delivery.created_at).toISOString(),
    completed_at: delivery.completed_at ? new Date(delivery.completed_at).toISOString() : null,
    attempts: attempts.map((a) => ({
      number: a.number,
      scheduled_at: new Date(a.scheduled_at).toISOString(),
      started_at: new Date(a.started_at).toISOString(),
      duration_ms: a.duration_ms,
      status: a.status,
      response_excerpt: a.response_excerpt,
      error: a.error,
      outcome: a.outcome,
    })),
    payload: delivery.payload,
  };
}
