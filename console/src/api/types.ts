/** Shapes of the public API's answers the console reads (see /openapi.json). */
export interface TokenPair {
  token_type: 'Bearer';
  access_token: string;
  expires_in: number;
  refresh_token: string;
  refresh_token_expires_at: string;
  account_id: string;
  session_id: string;
  account_created: boolean;
}

export interface Pagination {
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

export interface Page<T> {
  data: T[];
  pagination: Pagination;
}

export interface Workspace {
  id: string;
  name: string;
  created_at: string;
  updated_at: string;
}

export interface Credits {
  monthly_allowance: number;
  allowance_remaining: number;
  purchased_balance: number;
  remaining: number;
}

export interface Profile {
  id: string;
  email: string;
  full_name: string | null;
  plan: string;
  is_staff: boolean;
  created_at: string;
  credits: Credits;
  workspaces: Workspace[];
  identities: Array<{ provider: string; email: string | null; linked_at: string }>;
}

export interface Providers {
  methods: Array<'magic_link' | 'password'>;
  providers: Array<{ id: string; name: string; authorize_url: string }>;
}

export interface Engine {
  id: string;
  version: string;
  kind: 'tabular' | 'forecast';
  tasks: string[];
  credit_price_per_row: number;
  priced_per: 'scored_row' | 'forecast_point';
  description: string;
  default: boolean;
}

export interface ModelVersion {
  id: string;
  number: number;
  engine: { id: string; version: string };
  trigger: 'train' | 'refresh';
  serving: boolean;
  context_rows: number;
  outcomes_folded: number;
  validation: { metric: string; score: number; higher_is_better: boolean; baseline_score: number };
  top_factors?: Array<{ feature: string; importance: number }>;
  created_at: string;
}

export interface Model {
  id: string;
  name: string;
  target: string;
  task: 'binary' | 'multiclass' | 'regression';
  engine: string;
  status: 'training' | 'serving' | 'archived';
  feature_columns: string[];
  explain: boolean;
  auto_update: boolean;
  version: ModelVersion | null;
  versions_count: number;
  workspace_id: string;
  created_at: string;
  updated_at: string;
  archived_at: string | null;
}

export type Scalar = string | number | boolean | null;
export type Row = Record<string, Scalar>;

export interface ValidationReport {
  valid: boolean;
  target: string;
  report: Record<string, unknown> | null;
  errors: Array<{ code: string; message: string }>;
  hint: string;
  trial: { verdict?: { level: 'usable' | 'weak' | 'no_signal'; message: string; column?: string }; metrics?: Record<string, unknown> };
}

export interface PredictResult {
  model_id: string;
  version: { id: string; number: number };
  predictions: Array<{ request_id: string; prediction: string | number | boolean } & Record<string, unknown>>;
  credits_charged: number;
  credits_remaining: number;
}

export interface PredictionHistoryEntry {
  request_id: string;
  version_number: number;
  features: Row;
  output: Record<string, unknown>;
  outcome?: unknown;
  created_at: string;
}

export interface Performance {
  model_id: string;
  days: number;
  from: string;
  predictions: number;
  expected: { version: number; metric: string; score: number | null; higher_is_better: boolean; baseline_score: number | null } | null;
  observed: { matched: number; metric: string; score: number | null } | null;
  verdict: 'holding' | 'weak' | 'dropped' | null;
}

export interface Verdict {
  level: 'usable' | 'no_signal';
  message: string;
}

export interface BacktestResult {
  horizon: number;
  windows: number;
  baseline: string;
  mase: number;
  naive_mase: number;
  verdict: Verdict;
  by_window: Array<{ window: number; item_id?: string; start: string; end: string; mase: number; naive_mase: number }>;
  series?: Array<{ item_id: string | null; windows: number; mase: number; naive_mase: number; verdict: Verdict }>;
}

export interface Usage {
  workspace_id: string;
  from: string;
  to: string;
  total_credits: number;
  total_calls: number;
  by_day: Array<{ day: string; operation: string; credits: number; calls: number }>;
}

export interface RequestLogEntry {
  request_id: string;
  method: string;
  path: string;
  operation: string;
  status: number;
  error_code: string | null;
  credits: number;
  duration_ms: number;
  key_id: string | null;
  created_at: string;
}

export interface ApiKey {
  id: string;
  name: string;
  kind: 'api' | 'admin';
  status: 'active' | 'ending' | 'revoked' | 'expired';
  display_prefix: string;
  last_four: string;
  workspace_id: string;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  ends_at: string | null;
  revoked_at: string | null;
  revoke_reason: string | null;
  rotated_from: string | null;
  rotated_at: string | null;
}

export type ApiKeyWithSecret = ApiKey & { secret: string };

export const WEBHOOK_EVENTS = ['model.trained', 'model.stale', 'model.refreshed', 'credits.low'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface Webhook {
  id: string;
  url: string;
  events: WebhookEvent[];
  all_events: boolean;
  active: boolean;
  disabled_reason: string | null;
  disabled_at: string | null;
  last_success_at: string | null;
  failing_since: string | null;
  created_at: string;
}

export interface WebhookAttempt {
  number: number;
  scheduled_at: string;
  started_at: string;
  duration_ms: number;
  status: number | null;
  response_excerpt: string | null;
  error: string | null;
  outcome: 'succeeded' | 'retry' | 'failed';
}

export interface WebhookDelivery {
  id: string;
  event_id: string;
  event_type: string;
  redelivery_of: string | null;
  state: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempt_count: number;
  created_at: string;
  attempts: WebhookAttempt[];
}

export interface Plan {
  name: string;
  currency: string;
  monthly_price: number | null;
  monthly_allowance: number | null;
  max_models: number | null;
  max_training_rows: number | null;
  credit_block_size: number;
  credit_block_price: number | null;
  min_credit_units: number | null;
  self_serve: boolean;
}

/** GET/PATCH/DELETE /v1/billing/subscription (api/schemas/billing.ts). */
export interface Subscription {
  plan: string;
  /** Stripe's status, or `none`. */
  status: string;
  subscription_id: string | null;
  current_period_end: string | null;
  cancel_at_period_end: boolean;
  /** A plan change not in effect yet: a downgrade at plan_changes_at, or an upgrade Stripe has not confirmed (plan_changes_at null). */
  pending_plan: string | null;
  plan_changes_at: string | null;
  billing_account: boolean;
  monthly_allowance: number;
  allowance_remaining: number;
  allowance_period: string;
  purchased_balance: number;
  credits_remaining: number;
}

export interface CheckoutSession {
  id: string;
  url: string;
  expires_at: string;
}

export interface CreditPurchase {
  id: string;
  state: 'pending' | 'settled' | 'failed' | 'expired';
  units: number;
  amount: number;
  currency: string;
  payment_url: string | null;
  checkout_session_id: string | null;
  expires_at: string;
  created_at: string;
  closed_at: string | null;
  units_reversed: number;
}

export interface OutcomesResult {
  accepted: number;
  pending: number;
  outcome_ids: string[];
  integration_started: boolean;
}

export interface RefreshResult {
  model_id: string;
  version: ModelVersion;
  outcomes_folded: number;
}
