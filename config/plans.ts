/**
 * Plans, quotas and limits (DESIGN.md, "Plans"). One module so that billing, quotas and size checks
 * agree; `null` means "by contract" (no fixed number).
 */
export const PLAN_NAMES = ['free', 'build', 'pro', 'growth', 'contract'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface PlanLimits {
  monthlyAllowance: number | null;
  maxModels: number | null;
  maxTrainingRows: number | null;
  /** Largest dataset accepted as a JSON body (bytes): DATASET_TOO_LARGE beyond. */
  maxDatasetBytes: number;
  /** Largest uploaded file (bytes): FILE_TOO_LARGE beyond. */
  maxFileBytes: number;
  canBuyCredits: boolean;
}

/** Plans a customer can subscribe to through Checkout (the contract's `build`|`pro`|`growth`). */
export const PAID_PLANS = ['build', 'pro', 'growth'] as const;
export type PaidPlan = (typeof PAID_PLANS)[number];

/** Credits in one purchasable block: purchases are whole blocks. */
export const CREDIT_BLOCK = 100;

/**
 * The most purchased credits an account may hold, pending purchases included (billing.ts): balances are
 * 32-bit integers, and with a contract's allowance (at most MAX_CONTRACT_ALLOWANCE) their sum stays
 * below 2^31.
 */
export const MAX_PURCHASED_BALANCE = 1_000_000_000;

/**
 * Credit purchases an account may have waiting for payment at once (each holds a Checkout Session
 * at Stripe and a `purchase/<pur>` workflow for up to PURCHASE_SESSION_TTL_SECONDS).
 */
export const MAX_PENDING_PURCHASES = 10;

/**
 * Calls that ask Stripe on an account's behalf (checkout, credit purchase, portal, plan change,
 * cancellation) per account and window: far above what a person paying needs, far below what would
 * spend the Stripe API rate limit that every customer's payments share.
 */
export const STRIPE_CALLS_PER_ACCOUNT = { points: 30, windowSeconds: 10 * 60 };

/** The largest monthly allowance a contract account may be given (the operator CLI). */
export const MAX_CONTRACT_ALLOWANCE = 1_000_000_000;

/**
 * Prices, in minor units of BILLING_CURRENCY. Stripe charges the prices found by lookup_key
 * (`plan_<plan>`, `credits_<plan>`), so these amounts must match the Stripe account's; they are what
 * `GET /v1/plans` shows and what the local Stripe stand-in is seeded with. `null`: no such price
 * (free costs nothing and cannot buy credits; contract is priced by contract).
 */
export const BILLING_CURRENCY = 'usd';
export const PLAN_PRICES: Record<PlanName, { monthly: number | null; perCreditBlock: number | null }> = {
  free: { monthly: 0, perCreditBlock: null },
  build: { monthly: 4_900, perCreditBlock: 50 },
  pro: { monthly: 29_900, perCreditBlock: 40 },
  growth: { monthly: 99_900, perCreditBlock: 30 },
  contract: { monthly: null, perCreditBlock: null },
};

/**
 * The smallest amount Stripe charges, in minor units of BILLING_CURRENCY (0.50 USD): a Checkout Session
 * for less is refused by Stripe, so a purchase of fewer credits is refused before one is asked for.
 */
export const STRIPE_MINIMUM_CHARGE = 50;

/** The fewest credits one purchase may buy at `blockPrice` per block: a whole number of blocks costing at least STRIPE_MINIMUM_CHARGE. */
export const minimumCreditUnits = (blockPrice: number): number => Math.max(1, Math.ceil(STRIPE_MINIMUM_CHARGE / Math.max(1, blockPrice))) * CREDIT_BLOCK;

export const planPriceLookupKey = (plan: PaidPlan): string => `plan_${plan}`;
export const creditPriceLookupKey = (plan: PlanName): string => `credits_${plan}`;

const MiB = 1024 * 1024;

export const PLANS: Record<PlanName, PlanLimits> = {
  free: { monthlyAllowance: 1_000, maxModels: 1, maxTrainingRows: 10_000, maxDatasetBytes: 10 * MiB, maxFileBytes: 10 * MiB, canBuyCredits: false },
  build: { monthlyAllowance: 20_000, maxModels: 10, maxTrainingRows: 50_000, maxDatasetBytes: 50 * MiB, maxFileBytes: 50 * MiB, canBuyCredits: true },
  pro: { monthlyAllowance: 200_000, maxModels: 50, maxTrainingRows: 200_000, maxDatasetBytes: 200 * MiB, maxFileBytes: 200 * MiB, canBuyCredits: true },
  growth: { monthlyAllowance: 1_000_000, maxModels: 200, maxTrainingRows: 1_000_000, maxDatasetBytes: 500 * MiB, maxFileBytes: 500 * MiB, canBuyCredits: true },
  contract: { monthlyAllowance: null, maxModels: null, maxTrainingRows: null, maxDatasetBytes: 500 * MiB, maxFileBytes: 500 * MiB, canBuyCredits: false },
};

/**
 * Request budgets (requests per second, averaged over RATE_LIMIT_WINDOW_SECONDS so that short bursts
 * pass): per API key and per workspace (all its keys together).
 */
export const RATE_LIMITS: Record<PlanName, { perKey: number; perWorkspace: number }> = {
  free: { perKey: 10, perWorkspace: 20 },
  build: { perKey: 50, perWorkspace: 100 },
  pro: { perKey: 200, perWorkspace: 400 },
  growth: { perKey: 1_000, perWorkspace: 2_000 },
  contract: { perKey: 2_000, perWorkspace: 4_000 },
};
export const RATE_LIMIT_WINDOW_SECONDS = 10;

export const MAX_WEBHOOKS_PER_WORKSPACE = 10;
/**
 * Live API keys (not revoked, not expired or ended) a workspace may hold: creating one more answers
 * 409 TOO_MANY_API_KEYS. A rotation with a grace counts as one more (both keys work until it ends);
 * one with grace_days 0 replaces its key and is always allowed.
 */
export const MAX_API_KEYS_PER_WORKSPACE = 100;
/**
 * Outcomes a model may hold waiting for a refresh (pending, or folded into a version not fitted yet):
 * the most its plan trains on (a refresh keeps only that many of the newest context rows anyway), and
 * for a plan without a training limit this many. Reporting more is 409 TOO_MANY_PENDING_OUTCOMES.
 */
export const MAX_PENDING_OUTCOMES_WITHOUT_ROW_LIMIT = 1_000_000;
export const pendingOutcomesLimit = (plan: PlanName): number => PLANS[plan].maxTrainingRows ?? MAX_PENDING_OUTCOMES_WITHOUT_ROW_LIMIT;
/**
 * What the outcomes a model holds waiting for a refresh may weigh together (their features as JSON):
 * what one training set of the plan may (maxDatasetBytes). The row limit alone did not bound them: a
 * twenty-first probe's free model took outcomes of 8 MB each, 69 → 257 MB of database in nine calls,
 * about 100 GB at the row limit, copied into a context chunk kept for good at the refresh.
 */
export const pendingOutcomesBytesLimit = (plan: PlanName): number => PLANS[plan].maxDatasetBytes;
/**
 * Fits a plan allows in any FIT_BUDGET_WINDOW_MS (services/fit-budgets.ts), counted twice: new
 * versions made by refreshes of one model (a caller's or its integration's), and models an account
 * creates (all workspaces, archived and deleted ones included). Fits and outcomes are free and an
 * archived model frees its quota slot, so an eighteenth probe refreshed one free model every 0.33 s and
 * trained and archived the free plan's one model in a loop every 0.47 s, each a fit on an engine thread
 * and a version of 40 KB to 1 MB kept for good. Beyond, the caller gets 429 RATE_LIMITED with
 * Retry-After, and an integration waits until a version leaves the window. The free plan's 24 is one
 * an hour on average.
 */
export const FITS_PER_DAY: Record<PlanName, number> = { free: 24, build: 240, pro: 1_440, growth: 8_640, contract: 8_640 };
export const FIT_BUDGET_WINDOW_MS = 24 * 3_600_000;
/**
 * Models an account may keep, archived ones included, per quota slot of its plan (free 10, build 100,
 * pro 500, growth 2,000; a contract none). Archived models free their slot but keep their versions,
 * artefacts and training data, so at FITS_PER_DAY a free account trained and archived 24 models a
 * day for good; beyond this, a new model is 402 QUOTA_MODELS_EXCEEDED until archived ones are deleted
 * (a deletion purges what a model keeps).
 */
export const KEPT_MODELS_PER_SLOT = 10;
export const keptModelsLimit = (plan: PlanName): number | null => {
  const slots = PLANS[plan].maxModels;
  return slots === null ? null : slots * KEPT_MODELS_PER_SLOT;
};
/**
 * Forecast points (series-windows × horizon) an account may backtest in any FREE_BUDGET_WINDOW_SECONDS,
 * free: its plan's monthly allowance of paid points, each day (growth's for a contract). The backtest
 * is free and its last window scores the forecast the paid route would answer for the history before
 * it, so backtests with made-up last values tell that forecast (an eighteenth probe read it to 15
 * digits), for every series of a call at once. Read that way a value costs at least 6 points (horizon
 * 1: three backtests of one window each, a twenty-first probe), so what can be read in a month stays
 * within five times the plan's own allowance, while a free account can still backtest 20 series × 3
 * windows × 14 steps a day (ten times this budget, as first set, let 50 times the allowance be read).
 */
export const BACKTEST_POINTS_PER_DAY: Record<PlanName, number> = { free: 1_000, build: 20_000, pro: 200_000, growth: 1_000_000, contract: 1_000_000 };
/**
 * Validations (`POST /v1/datasets/validate`, free) an account may run in any FREE_BUDGET_WINDOW_SECONDS.
 * The trial's held-out error is reported exactly and its split depends on the row count only, so a
 * row added with two made-up targets tells the trial model's prediction of it (a twenty-first probe
 * read predictions to 1e-15, one a call, hundreds of thousands a day for nothing). A prediction read
 * that way costs one validation: a free account reads at most 1,500 a month (its allowance is
 * 1,000), a paid one less than its allowance; 50 validations a day is more than a person checking
 * data needs.
 */
export const VALIDATIONS_PER_DAY: Record<PlanName, number> = { free: 50, build: 500, pro: 5_000, growth: 20_000, contract: 20_000 };
/** The window of the free routes' daily budgets (BACKTEST_POINTS_PER_DAY, VALIDATIONS_PER_DAY). */
export const FREE_BUDGET_WINDOW_SECONDS = 24 * 3_600;
export const REQUEST_LOG_RETENTION_DAYS = 30;
/** Webhook deliveries (with their attempts) and events are kept this long once finished (webhooks/events.ts). */
export const WEBHOOK_HISTORY_RETENTION_DAYS = 30;
/** Scored rows stay in the prediction history this long: past the longest performance window (365 days). */
export const PREDICTION_RETENTION_DAYS = 400;

export const PAGINATION = {
  defaultLimit: 50,
  maxLimit: 200,
} as const;

export const KEY_ROTATION = {
  defaultGraceDays: 7,
  maxGraceDays: 90,
} as const;

/** Rows scored by one predict call, on every plan. */
export const MAX_PREDICT_ROWS_PER_CALL = 10_000;

export const IDEMPOTENCY_TTL_HOURS = 24;

/**
 * Sign-in budgets (docs/DECISIONS.md, "Accounts and web sessions"): attempts per window, per address
 * and per client address, for each step. Counted in PostgreSQL so that every API process shares them.
 * `addressPerClient`: the address's budget is counted per client (address and client together).
 * - The steps that only send a mail: counted per address alone, anyone could spend the budget and keep
 *   the address's owner from asking for a link for the window (a tenth probe); what an inbox receives
 *   is bounded by SIGN_IN_MAIL_INTERVAL_SECONDS whoever asks.
 * - The staff steps (`password`, and `code_verify`, which only the staff code uses): a staff address
 *   has no link to fall back on, so a budget anyone could spend kept its staff out for as long as
 *   someone spent it, five wrong passwords every 15 minutes. A right password only mails a code to the
 *   staff inbox, and a staff code closes on its fifth wrong guess whoever sends them.
 */
export const SIGN_IN_STEPS = ['login', 'magic_link_request', 'magic_link_verify', 'password', 'code_verify', 'refresh', 'oauth'] as const;
export type SignInStep = (typeof SIGN_IN_STEPS)[number];
export const SIGN_IN_LIMITS: Record<SignInStep, { perAddress: number | null; perClient: number; windowSeconds: number; addressPerClient?: true }> = {
  login: { perAddress: 20, perClient: 60, windowSeconds: 15 * 60, addressPerClient: true },
  magic_link_request: { perAddress: 5, perClient: 30, windowSeconds: 60 * 60, addressPerClient: true },
  magic_link_verify: { perAddress: 10, perClient: 30, windowSeconds: 15 * 60 },
  password: { perAddress: 5, perClient: 20, windowSeconds: 15 * 60, addressPerClient: true },
  code_verify: { perAddress: 10, perClient: 30, windowSeconds: 15 * 60, addressPerClient: true },
  refresh: { perAddress: null, perClient: 120, windowSeconds: 15 * 60 },
  oauth: { perAddress: null, perClient: 60, windowSeconds: 15 * 60 },
};
/** At most one sign-in mail per address per this many seconds (a repeated request answers as usual, sending nothing). */
export const SIGN_IN_MAIL_INTERVAL_SECONDS = 60;
/** Workspaces one account may hold. */
export const MAX_WORKSPACES_PER_ACCOUNT = 20;
