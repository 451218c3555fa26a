import { useState, type FormEvent } from 'react';
import { call, get } from '../api/client';
import { asApiError, type ApiError } from '../api/errors';
import type { Plan, Subscription } from '../api/types';
import { Busy, ErrorNotice, Loading } from '../components/feedback';
import { formatDate, formatInt, formatMoney } from '../lib/format';
import { useResource } from '../lib/use-resource';

/** Checkout, credit purchases and the portal all hand the browser to the payment provider's page. */
async function goTo(path: string, json?: unknown): Promise<void> {
  const { data } = await call<{ url?: string; payment_url?: string | null }>(path, { method: 'POST', json: json ?? {} });
  const target = data.url ?? data.payment_url;
  if (target) window.location.assign(target);
}

export function Billing() {
  const plans = useResource((signal) => call<{ data: Plan[] }>('/v1/plans', { auth: false, signal }).then((a) => a.data), []);
  const subscription = useResource((signal) => get<Subscription>('/v1/billing/subscription', undefined, signal), []);
  const [units, setUnits] = useState(500);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const run = (label: string, task: () => Promise<void>) => {
    setBusy(label);
    setError(null);
    task()
      .catch((err: unknown) => setError(asApiError(err)))
      .finally(() => setBusy(null));
  };
  const buy = (e: FormEvent) => {
    e.preventDefault();
    run('Opening the payment page', () => goTo('/v1/billing/credits', { units }));
  };
  const sub = subscription.data;

  return (
    <>
      <h1>Billing</h1>
      {busy && <Busy label={busy} />}
      <ErrorNotice error={error} />
      <section aria-labelledby="sub-title" className="card">
        <h2 id="sub-title">Your plan</h2>
        <ErrorNotice error={subscription.error} />
        {subscription.loading && !sub && <Loading what="the subscription" />}
        {sub && (
          <p>
            Plan <strong>{sub.plan}</strong> ({sub.status})
            {sub.current_period_end ? `, current period ends ${formatDate(sub.current_period_end)}` : ''}
            {sub.cancel_at_period_end ? ', cancelled at the end of the period' : ''}
            {sub.pending_plan ? `, changing to ${sub.pending_plan}` : ''}.
          </p>
        )}
        <button type="button" className="secondary" disabled={busy !== null} onClick={() => run('Opening the billing portal', () => goTo('/v1/billing/portal'))}>
          Manage payment details and invoices
        </button>
      </section>
      <section aria-labelledby="plans-title" className="card">
        <h2 id="plans-title">Plans</h2>
        <ErrorNotice error={plans.error} />
        {plans.data && (
          <div className="table-scroll" tabIndex={0} role="region" aria-label="Plans">
            <table>
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
                {plans.data.data.map((p) => (
                  <tr key={p.name}>
                    <td>{p.name}</td>
                    <td>{formatMoney(p.monthly_price, p.currency)}</td>
                    <td>{p.monthly_allowance === null ? 'by contract' : formatInt(p.monthly_allowance)}</td>
                    <td>{p.max_models ?? 'by contract'}</td>
                    <td>{p.credit_block_price === null ? '—' : formatMoney(p.credit_block_price, p.currency)}</td>
                    <td>
                      {p.self_serve && p.name !== sub?.plan && (
                        <button type="button" disabled={busy !== null} onClick={() => run(`Opening the checkout for ${p.name}`, () => goTo('/v1/billing/checkout', { plan: p.name }))}>
                          Choose {p.name}
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <form onSubmit={buy} className="card">
        <h2>Buy credits</h2>
        <p className="muted">Credits are bought in blocks of 100 at your plan’s rate, and credited once the payment settles.</p>
        <label htmlFor="units">Credits</label>
        <input id="units" type="number" min={100} step={100} required value={units} onChange={(e) => setUnits(Number(e.target.value))} />
        <button type="submit" disabled={busy !== null}>
          Buy {formatInt(units)} credits
        </button>
      </form>
    </>
  );
}
