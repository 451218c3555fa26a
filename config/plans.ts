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
  canBuyCredits: boolean;
}

export const PLANS: Record<PlanName, PlanLimits> = {
  free: { monthlyAllowance: 1_000, maxModels: 1, maxTrainingRows: 10_000, canBuyCredits: false },
  build: { monthlyAllowance: 20_000, maxModels: 10, maxTrainingRows: 50_000, canBuyCredits: true },
  pro: { monthlyAllowance: 200_000, maxModels: 50, maxTrainingRows: 200_000, canBuyCredits: true },
  growth: { monthlyAllowance: 1_000_000, maxModels: 200, maxTrainingRows: 1_000_000, canBuyCredits: true },
  contract: { monthlyAllowance: null, maxModels: null, maxTrainingRows: null, canBuyCredits: false },
};

export const MAX_WEBHOOKS_PER_WORKSPACE = 10;
export const REQUEST_LOG_RETENTION_DAYS = 30;

export const PAGINATION = {
  defaultLimit: 50,
  maxLimit: 200,
} as const;

export const KEY_ROTATION = {
  defaultGraceDays: 7,
  maxGraceDays: 90,
} as const;
