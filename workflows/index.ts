// Every workflow the worker registers. Deterministic code only: no I/O, no Date.now, no Math.random.
export { keyGraceExpiry } from './key-grace-expiry';
export { sweepEndedKeysWorkflow } from './sweep-ended-keys';
export { trainModel, refreshModel } from './train-model';
export { integration, outcomesReceived } from './integration';
export { deleteAccount } from './delete-account';
export { webhookDelivery } from './webhook-delivery';
export { markStaleModelsWorkflow } from './mark-stale-models';
export { creditPurchase, purchaseOutcome } from './credit-purchase';
export { resetAllowancesWorkflow } from './reset-allowances';
