import path from 'node:path';
import { z } from 'zod';

/**
 * The one place that reads process.env. Everything else receives a parsed AppConfig, so tests can
 * build a config explicitly and a bad deployment fails at start-up instead of at first use.
 */
const durationPattern = /^\d+(ms|s|m|h|d)$/;

/** Stripe's least life of a Checkout Session (30 minutes) and a minute for the call to reach it. */
export const PURCHASE_SESSION_TTL_MIN_SECONDS = 31 * 60;

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  HOST: z.string().default('0.0.0.0'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Empty: `npm start` runs an embedded PostgreSQL under DATA_DIR. */
  DATABASE_URL: z.string().url().optional(),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  /** Empty: `npm start` runs `temporal server start-dev` with its data in DATA_DIR. */
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('prediction-service'),
  TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
  DATA_DIR: z.string().default(path.resolve(__dirname, '..', '.data')),
  TOOLS_DIR: z.string().default(path.resolve(__dirname, '..', '.tools')),
  /** Largest JSON body accepted (bytes); beyond it 413. */
  JSON_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(20 * 1024 * 1024),
  /** Largest multipart upload accepted (bytes); beyond it 413. */
  FILE_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(50 * 1024 * 1024),
  /** Worker threads running engine code (fits, scores); default: one per core. */
  ENGINE_THREADS: z.coerce.number().int().min(1).max(64).optional(),
  /** Memory budget of each engine thread's cache of loaded models (MiB). */
  ENGINE_MODEL_CACHE_MB: z.coerce.number().int().min(1).default(256),
  /** Daily series each engine thread of an API process forecasts at start to compile its code; 0: none. */
  ENGINE_WARM_UP_SERIES: z.coerce.number().int().min(0).max(64).default(8),
  /** How soon a fit whose worker stopped heartbeating is retried on another worker. */
  FIT_HEARTBEAT_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(600).default(30),
  /** How often the Temporal Schedule marks keys whose expires_at has passed. */
  KEY_EXPIRY_SWEEP_EVERY: z.string().regex(durationPattern).default('1m'),
  /** Minimum interval between two writes of an API key's last_used_at. */
  KEY_LAST_USED_RESOLUTION_SECONDS: z.coerce.number().int().min(0).default(60),
  /** A model still `training` this long after creation gets its training (re)started by the sweep. */
  TRAINING_STRANDED_AFTER_SECONDS: z.coerce.number().int().min(1).default(120),
  /** How long a paid call may hold its credits before the sweep gives them back (its process died). */
  CREDIT_HOLD_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  /** How long an Idempotency-Key stays claimed by a call that stopped renewing it (its process died). */
  IDEMPOTENCY_LEASE_SECONDS: z.coerce.number().int().min(1).max(3_600).default(30),
  /** When set, GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>`; unset, it is public. */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** Where a worker-only process serves GET /metrics (the API serves it on PORT); unset: not served. */
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** How long SIGTERM waits for in-flight requests and activities before closing what is left. */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().int().min(0).max(3600).default(30),

  // --- Accounts and web sessions ---
  /** Where mail goes (smtp:// or smtps://). Unset: `npm start` runs a local mail catcher; the API answers 503 to sign-in steps that mail. */
  SMTP_URL: z.string().url().optional(),
  MAIL_FROM: z.string().min(3).default('Prediction service <no-reply@localhost>'),
  /** The console's Vite build, served at /console (`npm start` builds it; scripts/build-console.ts). */
  CONSOLE_DIR: z.string().default(path.resolve(__dirname, '..', 'console', 'dist')),
  /** The console: magic links and the OAuth callback's redirect point here; default <PUBLIC_URL>/console. */
  FRONTEND_URL: z.string().url().optional(),
  /** This API as browsers reach it (OAuth redirect URIs are built from it); default http://127.0.0.1:PORT. */
  PUBLIC_URL: z.string().url().optional(),
  /** Comma-separated domains whose addresses sign in with password + emailed code. */
  STAFF_EMAIL_DOMAINS: z.string().default(''),
  /** Ed25519 private key (PKCS#8 PEM) signing access tokens; unset outside production: generated once under DATA_DIR. */
  JWT_PRIVATE_KEY: z.string().min(40).optional(),
  /** Key id (`kid`) of JWT_PRIVATE_KEY. */
  JWT_KEY_ID: z.string().min(1).max(100).optional(),
  /** Public keys that still verify (a JWKS JSON `{"keys":[…]}`, each with its `kid`): the keys of the rotation before. */
  JWT_PREVIOUS_PUBLIC_KEYS: z.string().optional(),
  JWT_ISSUER: z.string().min(1).default('prediction-service'),
  JWT_AUDIENCE: z.string().min(1).default('prediction-service-api'),
  ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(3600).default(900),
  REFRESH_TOKEN_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  /** Key of the HMAC that stores emailed codes (six digits are too few for a plain hash); unset outside production: generated once under DATA_DIR. */
  AUTH_CODE_SECRET: z.string().min(32).optional(),
  /** Comma-separated proxies (addresses, CIDRs, or `loopback`, `linklocal`, `uniquelocal`) whose X-Forwarded-For is believed. Empty: none. */
  TRUSTED_PROXIES: z.string().default(''),
  /** Folder of geoip-country's database files; unset: the one shipped in the package. */
  GEOIP_DATA_DIR: z.string().optional(),
  GITHUB_CLIENT_ID: z.string().min(1).optional(),
  GITHUB_CLIENT_SECRET: z.string().min(1).optional(),
  GOOGLE_CLIENT_ID: z.string().min(1).optional(),
  GOOGLE_CLIENT_SECRET: z.string().min(1).optional(),
  /** A generic OpenID Connect provider (`oidc`): its issuer URL (discovery), client id and secret. */
  OIDC_ISSUER: z.string().url().optional(),
  OIDC_CLIENT_ID: z.string().min(1).optional(),
  OIDC_CLIENT_SECRET: z.string().min(1).optional(),
  OIDC_DISPLAY_NAME: z.string().min(1).default('Single sign-on'),
  /** Multiplies every sign-in budget of config/plans.ts (tests that sign in often raise it; 1 in production). */
  SIGN_IN_BUDGET_SCALE: z.coerce.number().min(1).max(10_000).default(1),
  /** Base64 of 32 bytes: the AES-256-GCM key webhook secrets are encrypted with. Unset outside production: generated once under DATA_DIR. */
  WEBHOOK_SECRETS_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be the base64 of 32 bytes')
    .optional(),
  /** Development and tests only: lets webhooks target plain `http` on a loopback address. */
  WEBHOOKS_ALLOW_LOOPBACK_HTTP: z.stringbool().default(false),
  /** Waits before each delivery attempt (the first is usually 0s): Standard Webhooks' schedule; jitter is added. */
  WEBHOOK_RETRY_DELAYS: z
    .string()
    .regex(/^\d+(ms|s|m|h|d)(,\d+(ms|s|m|h|d))*$/, 'a comma-separated list of durations such as 0s,5s,5m')
    .default('0s,5s,5m,30m,2h,5h,10h,14h,20h,24h'),
  /** Bound of one delivery attempt: connection, answer and the read of its excerpt. */
  WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(60).default(15),
  /**
   * Delivery attempts one worker process runs at once, on their own task queue: an attempt may wait
   * its whole timeout on a receiver that does not answer, and on the shared queue such attempts took
   * the activity slots that purchases, folds, key expiries and erasures of every account need.
   */
  WEBHOOK_ATTEMPTS_PER_WORKER: z.coerce.number().int().min(1).max(1000).default(100),
  /**
   * Attempts of one account in flight at once, across every worker: its receivers that never answer
   * then hold at most this many of the workers' attempts, not all of them.
   */
  WEBHOOK_ATTEMPTS_PER_ACCOUNT: z.coerce.number().int().min(1).max(1000).default(20),
  /** Attempts of one endpoint in flight at once (within its account's): a hanging endpoint leaves the others the rest. */
  WEBHOOK_ATTEMPTS_PER_ENDPOINT: z.coerce.number().int().min(1).max(1000).default(5),
  /** How often each worker looks for committed deliveries whose workflow has not started yet. */
  WEBHOOK_RELAY_EVERY_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  /** How often the Schedule looks for models going stale (model.stale). */
  STALE_MODELS_CHECK_EVERY: z.string().regex(durationPattern).default('1d'),
  /** Stripe's secret key; unset, `npm start` runs the local Stripe stand-in and billing routes elsewhere answer 503. */
  STRIPE_SECRET_KEY: z.string().min(1).optional(),
  /** Signing secret of the Stripe webhook endpoint (`whsec_…`); required with STRIPE_SECRET_KEY. */
  STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
  /** Another Stripe API base (the local stand-in, a proxy); unset: api.stripe.com. */
  STRIPE_API_URL: z.string().url().optional(),
  /**
   * Where Checkout and the billing portal send the customer back (`?checkout=success|cancelled` added).
   * Unset: the console's billing page (FRONTEND_URL), so that it follows PORT and PUBLIC_URL: a fixed
   * port 3000 sent a checkout of a service started on another port nowhere (a twenty-first probe).
   */
  BILLING_RETURN_URL: z.string().url().optional(),
  /**
   * Life of a credit purchase's Checkout Session: Stripe accepts 30 minutes to 24 hours after the
   * session's creation, which comes after the deadline is set, so at least 31 minutes
   * (PURCHASE_SESSION_TTL_MIN_SECONDS); below it only with NODE_ENV=test (the stand-in's sessions).
   */
  PURCHASE_SESSION_TTL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(86_400),
  /** How long after its session's expiry a purchase with no settlement event asks Stripe itself. */
  PURCHASE_RECONCILE_GRACE_SECONDS: z.coerce.number().int().min(0).max(86_400).default(600),
});

export type AppConfig = Omit<z.infer<typeof envSchema>, 'FRONTEND_URL' | 'BILLING_RETURN_URL'> & { FRONTEND_URL: string; BILLING_RETURN_URL: string };

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<AppConfig> = {}): AppConfig {
  const cleaned: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    // An empty variable means "not set", as operators expect from `FOO= npm start`.
    if (value !== undefined && value !== '') cleaned[key] = value;
  }
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  const merged = { ...parsed.data, ...overrides };
  // the console is served by this API: its links follow PORT (or PUBLIC_URL) unless set apart
  const frontendUrl = merged.FRONTEND_URL ?? `${(merged.PUBLIC_URL ?? `http://127.0.0.1:${merged.PORT}`).replace(/\/$/, '')}/console`;
  const config: AppConfig = {
    ...merged,
    FRONTEND_URL: frontendUrl,
    BILLING_RETURN_URL: merged.BILLING_RETURN_URL ?? `${frontendUrl.replace(/\/$/, '')}/billing`,
  };
  if (config.PURCHASE_SESSION_TTL_SECONDS < PURCHASE_SESSION_TTL_MIN_SECONDS && config.NODE_ENV !== 'test') {
    // Stripe refuses a Checkout Session that expires sooner than 30 minutes after its creation: every
    // credit purchase would answer 502 and leave a pending purchase behind.
    throw new Error(
      `Invalid configuration: PURCHASE_SESSION_TTL_SECONDS is at least ${PURCHASE_SESSION_TTL_MIN_SECONDS} (Stripe refuses a Checkout Session that expires within 30 minutes of its creation).`,
    );
  }
  if (config.STRIPE_SECRET_KEY && !config.STRIPE_WEBHOOK_SECRET) {
    throw new Error('Invalid configuration: STRIPE_WEBHOOK_SECRET is required with STRIPE_SECRET_KEY (the webhook could not verify Stripe\'s events).');
  }
  return config;
}
