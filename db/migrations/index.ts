import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121215945_initial } from './Migration20261121215945_initial';
import { Migration20261121221010_models } from './Migration20261121221010_models';
import { Migration20261123050000_service_path } from './Migration20261123050000_service_path';
import { Migration20261123070000_accounts } from './Migration20261123070000_accounts';
import { Migration20261123090000_webhooks } from './Migration20261123090000_webhooks';
import { Migration20261123080000_billing } from './Migration20261123080000_billing';
import { Migration20261124130000_prediction_calls } from './Migration20261124130000_prediction_calls';
import { Migration20261125180000_allowance_ceiling } from './Migration20261125180000_allowance_ceiling';
import { Migration20261127080000_idempotency_claims } from './Migration20261127080000_idempotency_claims';
import { Migration20261127140000_payment_reversals } from './Migration20261127140000_payment_reversals';
import { Migration20261127160000_webhook_history_retention } from './Migration20261127160000_webhook_history_retention';
import { Migration20261128060000_subscription_reconcile } from './Migration20261128060000_subscription_reconcile';
import { Migration20261128110000_subscription_checkouts } from './Migration20261128110000_subscription_checkouts';
import { Migration20261129040000_judged_number } from './Migration20261129040000_judged_number';
import { Migration20261129040000_reservation_retention } from './Migration20261129040000_reservation_retention';
import { Migration20261129100000_erased_accounts } from './Migration20261129100000_erased_accounts';
import { Migration20261129130000_fit_budgets } from './Migration20261129130000_fit_budgets';
import { Migration20261129170000_webhook_failure_gap } from './Migration20261129170000_webhook_failure_gap';
import { Migration20261129180000_closed_allowances } from './Migration20261129180000_closed_allowances';
import { Migration20261129190000_key_rotated_by } from './Migration20261129190000_key_rotated_by';
import { Migration20261129193000_webhook_attempt_slots } from './Migration20261129193000_webhook_attempt_slots';
import { Migration20261129200000_pending_plan } from './Migration20261129200000_pending_plan';
import { Migration20261129210000_billing_change_leases } from './Migration20261129210000_billing_change_leases';
import { Migration20261130000000_pending_deliveries_by_workspace } from './Migration20261130000000_pending_deliveries_by_workspace';

/**
 * Every committed migration, in order. Listed explicitly so that the migrator never depends on
 * loading files by glob (which differs between tsx, jest and compiled output).
 */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121215945_initial', class: Migration20261121215945_initial },
  { name: 'Migration20261121221010_models', class: Migration20261121221010_models },
  { name: 'Migration20261123050000_service_path', class: Migration20261123050000_service_path },
  { name: 'Migration20261123070000_accounts', class: Migration20261123070000_accounts },
  { name: 'Migration20261123090000_webhooks', class: Migration20261123090000_webhooks },
  { name: 'Migration20261123080000_billing', class: Migration20261123080000_billing },
  { name: 'Migration20261124130000_prediction_calls', class: Migration20261124130000_prediction_calls },
  { name: 'Migration20261125180000_allowance_ceiling', class: Migration20261125180000_allowance_ceiling },
  { name: 'Migration20261127080000_idempotency_claims', class: Migration20261127080000_idempotency_claims },
  { name: 'Migration20261127140000_payment_reversals', class: Migration20261127140000_payment_reversals },
  { name: 'Migration20261127160000_webhook_history_retention', class: Migration20261127160000_webhook_history_retention },
  { name: 'Migration20261128060000_subscription_reconcile', class: Migration20261128060000_subscription_reconcile },
  { name: 'Migration20261128110000_subscription_checkouts', class: Migration20261128110000_subscription_checkouts },
  { name: 'Migration20261129040000_judged_number', class: Migration20261129040000_judged_number },
  { name: 'Migration20261129040000_reservation_retention', class: Migration20261129040000_reservation_retention },
  { name: 'Migration20261129100000_erased_accounts', class: Migration20261129100000_erased_accounts },
  { name: 'Migration20261129130000_fit_budgets', class: Migration20261129130000_fit_budgets },
  { name: 'Migration20261129170000_webhook_failure_gap', class: Migration20261129170000_webhook_failure_gap },
  { name: 'Migration20261129180000_closed_allowances', class: Migration20261129180000_closed_allowances },
  { name: 'Migration20261129190000_key_rotated_by', class: Migration20261129190000_key_rotated_by },
  { name: 'Migration20261129193000_webhook_attempt_slots', class: Migration20261129193000_webhook_attempt_slots },
  { name: 'Migration20261129200000_pending_plan', class: Migration20261129200000_pending_plan },
  { name: 'Migration20261129210000_billing_change_leases', class: Migration20261129210000_billing_change_leases },
  { name: 'Migration20261130000000_pending_deliveries_by_workspace', class: Migration20261130000000_pending_deliveries_by_workspace },
];
