import Stripe from 'stripe';
import type { AppConfig } from '../config/env';
import { AppError } from './errors';

export type { Stripe };

/**
 * The stripe SDK client of the process, or null when billing is not configured. STRIPE_API_URL points
 * it elsewhere (the local stand-in in development and tests) through the SDK's own host, port and
 * protocol options; nothing else changes between the stand-in and the real Stripe.
 */
export function createStripeClient(config: Pick<AppConfig, 'STRIPE_SECRET_KEY' | 'STRIPE_API_URL'>): Stripe | null {
  if (!config.STRIPE_SECRET_KEY) return null;
  const base = config.STRIPE_API_URL ? new URL(config.STRIPE_API_URL) : null;
  const protocol = base?.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(config.STRIPE_SECRET_KEY, {
    maxNetworkRetries: 2,
    timeout: 20_000,
    ...(base ? { host: base.hostname, port: base.port || (protocol === 'http' ? 80 : 443), protocol } : {}),
  });
}

/** A call to Stripe; its refusals and outages become 502 PAYMENT_PROVIDER_ERROR (nothing of ours changed). */
export async function callStripe<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof Stripe.errors.StripeError) {
      throw new AppError('PAYMENT_PROVIDER_ERROR', 502, 'The payment provider refused the call or could not be reached; retry later.', {}, err);
    }
    throw err;
  }
}

/** Whether the error is Stripe's (a refusal or an outage), or wraps one as its cause. */
export function fromStripe(err: unknown): boolean {
  return err instanceof Stripe.errors.StripeError || (err instanceof Error && err.cause instanceof Stripe.errors.StripeError);
}

/** Whether Stripe answered 404 `resource_missing`: it does not know the object asked for. */
export function isResourceMissing(err: unknown): boolean {
  return err instanceof Stripe.errors.StripeInvalidRequestError && err.statusCode === 404 && err.code === 'resource_missing';
}

/** Whether Stripe refused a refund because the charge was refunded in full already. */
export function isAlreadyRefunded(err: unknown): boolean {
  return err instanceof Stripe.errors.StripeInvalidRequestError && err.code === 'charge_already_refunded';
}

/** Whether Stripe refused the call's parameters or the object's state (400 `invalid_request_error`, 404 included). */
export function isInvalidRequest(err: unknown): boolean {
  return err instanceof Stripe.errors.StripeInvalidRequestError;
}

export const billingUnavailable = (): AppError =>
  new AppError('BILLING_UNAVAILABLE', 503, 'Billing is not configured on this deployment (STRIPE_SECRET_KEY is not set).');
