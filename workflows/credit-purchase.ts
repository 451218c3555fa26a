import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { PurchaseSignal } from '../services/billing';

export const purchaseOutcome = defineSignal<[PurchaseSignal]>('purchaseOutcome');

const { settlePurchase, closePurchase, reconcilePurchase } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export interface CreditPurchaseInput {
  purchaseId: string;
  /** How long to wait for the settlement (the session's life plus a grace) before asking Stripe. */
  waitMs: number;
}

/** Rounds of waiting for a payment that settles later (bank debits take days) before giving up. */
const MAX_WAITS = 14;

/**
 * `purchase/<pur>`: waits for the Stripe webhook's verdict on the purchase's Checkout Session, then
 * credits the purchased balance once (or ends it failed or expired, crediting nothing). With no
 * verdict by the deadline it asks Stripe itself, so a lost event never loses a payment.
 */
export async function creditPurchase(input: CreditPurchaseInput): Promise<{ state: string }> {
  let verdict: PurchaseSignal | null = null;
  setHandler(purchaseOutcome, (signal) => {
    // A payment outranks any other news about the same session.
    if (verdict === null || signal.outcome === 'settled') verdict = signal;
  });
  for (let round = 1; ; round += 1) {
    if (await condition(() => verdict !== null, input.waitMs)) break;
    const state = await reconcilePurchase(input.purchaseId);
    if (state !== 'pending') return { state };
    if (round >= MAX_WAITS) return { state: await closePurchase(input.purchaseId, 'expired', 'deadline') };
  }
  const decided = verdict as PurchaseSignal | null;
  if (!decided) throw new Error('unreachable: the wait ended without a verdict');
  const state =
    decided.outcome === 'settled'
      ? await settlePurchase(input.purchaseId, decided.eventId)
      : await closePurchase(input.purchaseId, decided.outcome, decided.eventId);
  return { state };
}
