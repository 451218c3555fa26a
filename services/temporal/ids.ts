/** Workflow ids derive from resource ids so that Temporal itself refuses a duplicate start. */
export const workflowIds = {
  keyGrace: (keyId: string) => `key-grace/${keyId}`,
  train: (modelId: string) => `train/${modelId}`,
  refresh: (modelId: string) => `refresh/${modelId}`,
  integrate: (modelId: string) => `integrate/${modelId}`,
  deleteAccount: (accountId: string) => `delete-account/${accountId}`,
  delivery: (deliveryId: string) => `delivery/${deliveryId}`,
  purchase: (purchaseId: string) => `purchase/${purchaseId}`,
} as const;

export const scheduleIds = {
  sweepEndedKeys: 'sweep-ended-keys',
  markStaleModels: 'mark-stale-models',
  resetAllowances: 'reset-allowances',
} as const;
