import { useEffect, useRef, useState, type FormEvent } from 'react';
import { call, get, postOnce } from '../api/client';
import { ApiError } from '../api/errors';
import type { CheckoutSession, CreditPurchase, Plan, Subscription } from '../api/types';
import { Busy, ErrorNotice, Loading, Success } from '../components/feedback';
import { formatDate, formatInt, formatMoney } from '../lib/format';
import { RetryKey } from '../lib/idempotency';
import { useAction } from '../lib/use-action';
import { useResource } from '../lib/use-resource';
import { useSession } from '../session-context';
import { useDocumentTitle } from '../lib/use-document-title';

/** The purchase this tab sent to the payment page, so the page can follow it on return. */
const PURCHASE_KEY = 'console.billing.purchase';
/** Stripe's statuses with a live subscription (services/billing.ts): a plan change is a PATCH, not a second Checkout. */
const LIVE = new Set(['active', 'trialing', 'past_due']);

/** How long the page waits for the browser to leave before it offers its buttons again (a stopped navigation). */
const LEAVING_MS = 10_000;

/**
 * Checkout, credit purchases and the portal all hand the browser to the payment provider's page. The
 * returned promise settles only if the page is still here after LEAVING_MS or is shown again from the
 * back-forward cache, so the buttons stay disabled while the browser leaves: a second click in that
 * time opened a second Checkout Session.
 */
async function goTo(url: string | null | undefined): Promise<void> {
  if (!url) throw new ApiError(0, 'NO_PAYMENT_URL', 'The service did not answer a payment page for this request; try again.');
  window.location.assign(url);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, LEAVING_MS);
    window.addEventListener(
      'pageshow',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the payment page sent back in the address: `?checkout=success|cancelled` (BILLING_RETURN_URL). */
function readReturn(): 'success' | 'cancelled' | null {
  const outcome = new URLSearchParams(window.location.search).get('checkout');
  return outcome === 'success' || outcome === 'cancelled' ? outcome : null;
}

export function Billing() {
  useDocumentTitle('Billing');
  const { reloadProfile } = useSession();
  const plans = useResource((signal) => call<{ data: Plan[] }>('/v1/plans', { auth: false, signal }).then((a) => a.data.data), []);
  const subscription = useResource((signal) => get<Subscription>('/v1/billing/subscription', undefined, signal), []);
  const [units, setUnits] = useState(500);
  const { busy, error, run: act } = useAction();
  const retryKey = useRef(new RetryKey()).current;
  const [done, setDone] = useState<string | null>(null);
  const [returned] = useState(readReturn);
  const followed = useRef(false);

  const run = (label: string, task: () => Promise<string | void>) => {
    setDone(null);
    void act(label, task, { done: (message) => message && setDone(message) });
  };

  // Back from the payment page: Stripe's events change the plan or credit the purchase shortly after
  // the customer paid, so the page follows them for a while instead of showing the old state.
  useEffect(() => {
    if (followed.current || !returned) return;
    followed.current = true;
    window.history.replaceState(null, '', window.location.pathname);
    const purchaseId = sessionStorage.getItem(PURCHASE_KEY);
    sessionStorage.removeItem(PURCHASE_KEY);
    if (returned === 'cancelled') {
      setDone('The payment was cancelled: nothing was charged.');
      return;
    }
    const before = subscription.data;
    run('Waiting for the payment provider to confirm the payment', async () => {
      for (let i = 0; i < 40; i += 1) {
        if (purchaseId) {
          const purchase = await get<CreditPurchase>(`/v1/billing/credits/${encodeURIComponent(purchaseId)}`);
          if (purchase.state === 'settled') {
            subscription.reload();
            reloadProfile();
            return `${formatInt(purchase.units)} credits were added to your balance.`;
          }
          if (purchase.state !== 'pending') throw new ApiError(0, `PURCHASE_${purchase.state.toUpperCase()}`, `The purchase of ${formatInt(purchase.units)} credits ${purchase.state === 'failed' ? 'failed: the payment did not go through' : 'expired before it was paid'}.`);
        } else {
          const now = await get<Subscription>('/v1/billing/subscription');
          if (LIVE.has(now.status) && (!before || now.plan !== before.plan || now.subscription_id !== before.subscription_id)) {
            subscription.reload();
            reloadProfile();
            return `You are now on the ${now.plan} plan.`;
          }
        }
        await sleep(i < 10 ? 300 : 1000);
      }
      subscription.reload();
      return 'The payment was received; the payment provider has not confirmed it yet. This page shows the change once it does.';
    });
  }, [returned]);

  const buy = (e: FormEvent) => {
    e.preventDefault();
    run('Opening the payment page', async () => {
      const purchase = await postOnce<CreditPurchase>(retryKey, '/v1/billing/credits', { units });
      sessionStorage.setItem(PURCHASE_KEY, purchase.id);
      await goTo(purchase.payment_url);
    });
  };
  const choose = (plan: string) => {
    const live = sub !== undefined && sub.subscription_id !== null && LIVE.has(sub.status);
    if (live) {
      // A live subscription changes price at Stripe; the plan follows when Stripe confirms it (a downgrade, at the period's end).
      run(`Changing to ${plan}`, async () => {
        const changed = (await call<Subscription>('/v1/billing/subscription', { method: 'PATCH', json: { plan } })).data;
        subscription.reload();
        if (changed.pending_plan && changed.plan_changes_at) return `You stay on the ${changed.plan} plan until ${formatDate(changed.plan_changes_at)}, then move to ${changed.pending_plan}.`;
        return changed.pending_plan ? `Asked to change to ${changed.pending_plan}: the plan changes once the payment provider confirms it.` : `You are on the ${changed.plan} plan.`;
      });
      return;
    }
    run(`Opening the checkout for ${plan}`, async () => {
      sessionStorage.removeItem(PURCHASE_KEY);
      await goTo((await postOnce<CheckoutSession>(retryKey, '/v1/billing/checkout', { plan })).url);
    });
  };
  const cancel = () =>
    run('Cancelling the subscription', async () => {
      const after = (await call<Subscription>('/v1/billing/subscription', { method: 'DELETE' })).data;
      subscription.reload();
      return `The subscription ends ${after.current_period_end ? `on ${formatDate(after.current_period_end)}` : 'at the end of the period'}; the ${after.plan} plan stays until then.`;
    });

  const sub = subscription.data;
  const current = plans.data?.find((p) => p.name === sub?.plan);
  const blocks = Math.max(0, Math.floor(units / 100));

  return (
    <>
      <h1>Billing</h1>
      {busy && <Busy label={busy} />}
      <ErrorNotice error={error} />
      {done && <Success>{done}</Success>}
      <section aria-labelledby="sub-title" className="card">
        <h2 id="sub-title">Your plan</h2>
        <ErrorNotice error={subscription.error} />
        {subscription.loading && !sub && <Loading what="the subscription" />}
        {sub && (
          <>
            <dl className="facts">
              <div>
                <dt>Plan</dt>
                <dd data-testid="plan">{sub.plan}</dd>
              </div>
              <div>
                <dt>Subscription</dt>
                <dd data-testid="subscription-status">{sub.status === 'none' ? 'none' : sub.status}</dd>
              </div>
              <div>
                <dt>Credits this month ({sub.allowance_period})</dt>
                <dd data-testid="allowance">
                  {formatInt(sub.allowance_remaining)} of {formatInt(sub.monthly_allowance)}
                </dd>
              </div>
              <div>
                <dt>Purchased credits</dt>
                <dd data-testid="purchased">{formatInt(sub.purchased_balance)}</dd>
              </div>
              <div>
                <dt>Credits left</dt>
                <dd data-testid="billing-credits-remaining">{formatInt(sub.credits_remaining)}</dd>
              </div>
            </dl>
            {(sub.current_period_end || sub.cancel_at_period_end || sub.pending_plan) && (
              <p>
                {sub.current_period_end ? `Current period ends ${formatDate(sub.current_period_end)}` : 'Subscription'}
                {sub.cancel_at_period_end ? '; cancelled at the end of the period' : ''}
                {sub.pending_plan ? (sub.plan_changes_at ? `; moving to ${sub.pending_plan} on ${formatDate(sub.plan_changes_at)}` : `; changing to ${sub.pending_plan} once the payment is confirmed`) : ''}.
              </p>
            )}
          </>
        )}
        <div className="actions">
          {sub?.billing_account && (
            <button type="button" className="secondary" disabled={busy !== null} onClick={() => run('Opening the billing portal', async () => await goTo((await call<{ url: string }>('/v1/billing/portal', { method: 'POST', json: {} })).data.url))}>
              Manage payment details and invoices
            </button>
          )}
          {sub && sub.subscription_id && LIVE.has(sub.status) && !sub.cancel_at_period_end && (
            <button type="button" className="secondary" disabled={busy !== null} onClick={cancel}>
              Cancel the subscription
            </button>
          )}
        </div>
      </section>
      <section aria-labelledby="plans-title" className="card">
        <h2 id="plans-title">Plans</h2>
        <ErrorNotice error={plans.error} />
        {plans.loading && !plans.data && <Loading what="the plans" />}
        {plans.data && (
          <div className="table-scroll" tabIndex={0} role="region" aria-label="Plans">
            <table data-testid="plans">
              <thead>
                <tr>
                  <th scope="col">Plan</th>
                  <th scope="col">Monthly price</th>
                  <th scope="col">Credits a month</th>
                  <th scope="col">Models</th>
                  <th scope="col">100 extra credits</th>
                  <th scope="col">
                    <span className="visually-hidden">Action</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {plans.data.map((p) => (
                  <tr key={p.name}>
                    <td>{p.name}</td>
                    <td>{formatMoney(p.monthly_price, p.currency)}</td>
                    <td>{p.monthly_allowance === null ? 'by contract' : formatInt(p.monthly_allowance)}</td>
                    <td>{p.max_models === null ? 'by contract' : formatInt(p.max_models)}</td>
                    <td>{p.credit_block_price === null ? 'not offered' : formatMoney(p.credit_block_price, p.currency)}</td>
                    <td>
                      {p.name === sub?.plan ? (
                        <span className="muted">current plan</span>
                      ) : (
                        p.self_serve && (
                          <button type="button" disabled={busy !== null || !sub} onClick={() => choose(p.name)}>
                            Choose {p.name}
                          </button>
                        )
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <form onSubmit={buy} className="card" aria-labelledby="buy-title">
        <h2 id="buy-title">Buy credits</h2>
        <p className="muted">
          Credits are bought in blocks of 100 at your plan’s rate
          {current?.credit_block_price != null ? ` (${formatMoney(current.credit_block_price, current.currency)} per 100)` : ''}, and credited once the payment settles. They do not expire at
          the end of the month.
        </p>
        <label htmlFor="units">Credits</label>
        <input id="units" type="number" min={current?.min_credit_units ?? 100} step={100} required value={units} onChange={(e) => setUnits(Number(e.target.value))} />
        {current?.credit_block_price != null && blocks > 0 && <p className="muted">Price: {formatMoney(blocks * current.credit_block_price, current.currency)}</p>}
        <button type="submit" disabled={busy !== null}>
          Buy {formatInt(units)} credits
        </button>
      </form>
    </>
  );
}
