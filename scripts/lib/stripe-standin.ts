/**
 * A local stand-in for the part of Stripe's REST API the service calls (customers, prices by
 * lookup_key, Checkout Sessions, billing portal sessions, subscriptions and their schedules, charges
 * and their disputes), form-encoded as Stripe
 * reads it, with a checkout page that "pays" and sends the signed events a real Stripe would send.
 * Used by `npm start` when STRIPE_SECRET_KEY is unset, and by the tests as the third party they
 * drive the real stripe SDK against. It keeps everything in memory.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { BILLING_CURRENCY, CREDIT_BLOCK, PAID_PLANS, PLAN_NAMES, PLAN_PRICES, STRIPE_MINIMUM_CHARGE, creditPriceLookupKey, planPriceLookupKey } from '../../config/plans';

type Json = Record<string, unknown>;

export interface StripeStandIn {
  /** Base URL of the API and the checkout pages (`http://127.0.0.1:<port>`). */
  url: string;
  /** Where events are posted; may be set after start (the service's port is known later). */
  webhookUrl: string | null;
  webhookSecret: string;
  /** When false, events are kept in `outbox` instead of being posted (tests send them themselves). */
  autoDeliver: boolean;
  /** Every event made, in order. */
  events: Stripe.Event[];
  /** Events made while autoDeliver was off and not yet sent. */
  outbox: Stripe.Event[];
  customers: Map<string, Json>;
  sessions: Map<string, Json>;
  subscriptions: Map<string, Json>;
  /**
   * Subscription schedules (`sub_sched_…`): made from a subscription (`from_subscription`), their
   * phases updated, released; a schedule's next phase starts when its subscription's period ends
   * (endPeriod), and a schedule whose last phase ends is released (end_behavior `release`).
   */
  schedules: Map<string, Json>;
  /**
   * What each renewal billed (endPeriod): the subscription's price at the moment its new period
   * starts, that of the schedule's phase starting then included. Every renewal is listed, in order.
   */
  invoices: Array<{ subscription: string; customer: string; amount: number; lookupKey: string; billingReason: 'subscription_cycle'; periodStart: number; periodEnd: number }>;
  /** The charges of paid payment-mode sessions, by id. */
  charges: Map<string, Json>;
  /** Refunds the service asked for (`POST /v1/refunds`), by id. */
  refunds: Map<string, Json>;
  disputes: Map<string, Json>;
  /**
   * What a price change of a subscription billed or credited, by Stripe's proration rules: with
   * `billing_cycle_anchor: now` a new period starts and the new price is invoiced less the unused part
   * of the old; otherwise the price difference for the unused part of the period (`always_invoice`:
   * invoiced now; a negative amount is credited to the customer's balance); `proration_behavior: none`
   * bills and credits nothing. Every change is listed, in order.
   */
  prorations: Array<{ subscription: string; customer: string; amount: number; invoicedNow: boolean; periodRestarted: boolean; behavior: string }>;
  /** Every API call received: `METHOD /path`. */
  requests: string[];
  /** Posts one event signed as Stripe signs it; answers the webhook's status. */
  send(event: Stripe.Event): Promise<number>;
  /** Sends and empties the outbox. */
  flush(): Promise<number[]>;
  /** The customer pays the session: `paid` now, or `pending` (an asynchronous method settles later). */
  completeCheckout(sessionId: string, payment?: 'paid' | 'pending'): Promise<Stripe.Event[]>;
  /** The asynchronous payment of a completed session succeeds or fails. */
  settleAsyncPayment(sessionId: string, succeeded: boolean): Promise<Stripe.Event[]>;
  /** The session expires (as when its expires_at passes). */
  expireSession(sessionId: string): Promise<Stripe.Event[]>;
  /** The merchant refunds `amount` (default: what is left) of the session's charge: `charge.refunded`. */
  refundPayment(sessionId: string, amount?: number): Promise<Stripe.Event[]>;
  /** The cardholder disputes `amount` (default: all) of the session's charge: `charge.dispute.created`, funds withheld. */
  disputePayment(sessionId: string, amount?: number): Promise<Stripe.Event[]>;
  /** The card network decides the dispute: `charge.dispute.closed`. */
  closeDispute(disputeId: string, status: 'won' | 'lost'): Promise<Stripe.Event[]>;
  /** The customer is deleted (as from Stripe's dashboard): its subscriptions end at once, `customer.deleted`. */
  deleteCustomer(customerId: string): Promise<Stripe.Event[]>;
  /**
   * The subscription's period ends (as a test clock passing it would): renewed, and invoiced at the
   * price it renews on (`invoices`), or ended when cancel_at_period_end was set. A schedule's phase that
   * ends with the period gives way to the next one, whose price the subscription renews on
   * (`customer.subscription.updated`, `subscription_schedule.updated`); after its last phase the
   * schedule is released (`subscription_schedule.released`).
   */
  endPeriod(subscriptionId: string): Promise<Stripe.Event[]>;
  /** Stripe changes the subscription's status (e.g. `unpaid` after failed renewals). */
  setSubscriptionStatus(subscriptionId: string, status: string): Promise<Stripe.Event[]>;
  /** The next request `METHOD path` waits until released; `arrived` resolves when it comes in. */
  hold(method: string, path: string): { arrived: Promise<void>; release(): void };
  close(): Promise<void>;
}

const now = (): number => Math.floor(Date.now() / 1000);
const MONTH_SECONDS = 30 * 86_400;
const id = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`;

/** Stripe's form encoding (`a[b][0][c]=v`) back into nested objects and arrays. */
export function parseStripeForm(text: string): Json {
  const root: Json = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const path = rawKey.replace(/\]/g, '').split('[');
    let node: Json = root;
    path.forEach((segment, i) => {
      const key = segment === '' ? String(Object.keys(node).length) : segment;
      if (i === path.length - 1) node[key] = value;
      else node = (node[key] ??= {}) as Json;
    });
  }
  const arrays = (v: unknown): unknown => {
    if (!v || typeof v !== 'object') return v;
    const o = v as Json;
    const keys = Object.keys(o);
    const mapped = Object.fromEntries(keys.map((k) => [k, arrays(o[k])]));
    return keys.length > 0 && keys.every((k, i) => k === String(i)) ? keys.map((k) => mapped[k]) : mapped;
  };
  return arrays(root) as Json;
}

class StripeFailure extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly code?: string,
    readonly param?: string,
  ) {
    super(message);
  }
}

const missing = (what: string, value: string): StripeFailure => new StripeFailure(404, 'invalid_request_error', `No such ${what}: '${value}'`, 'resource_missing');

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export async function startStripeStandIn(options: { port?: number; host?: string; webhookUrl?: string | null; webhookSecret?: string } = {}): Promise<StripeStandIn> {
  const prices = new Map<string, Json>();
  const customers = new Map<string, Json>();
  const sessions = new Map<string, Json>();
  const subscriptions = new Map<string, Json>();
  const schedules = new Map<string, Json>();
  const charges = new Map<string, Json>();
  const refunds = new Map<string, Json>();
  const disputes = new Map<string, Json>();
  const idempotent = new Map<string, { status: number; body: Json }>();
  const holds: Array<{ key: string; arrived: () => void; released: Promise<void> }> = [];

  for (const plan of PAID_PLANS) {
    const amount = PLAN_PRICES[plan].monthly;
    if (amount !== null) {
      const price = { id: id('price'), object: 'price', active: true, currency: BILLING_CURRENCY, unit_amount: amount, lookup_key: planPriceLookupKey(plan), type: 'recurring', recurring: { interval: 'month', interval_count: 1 }, metadata: { plan } };
      prices.set(price.id, price);
    }
  }
  for (const plan of PLAN_NAMES) {
    const amount = PLAN_PRICES[plan].perCreditBlock;
    if (amount !== null) {
      const price = { id: id('price'), object: 'price', active: true, currency: BILLING_CURRENCY, unit_amount: amount, lookup_key: creditPriceLookupKey(plan), type: 'one_time', recurring: null, metadata: { plan, credits: String(CREDIT_BLOCK) } };
      prices.set(price.id, price);
    }
  }

  const standIn: StripeStandIn = {
    url: '',
    webhookUrl: options.webhookUrl ?? null,
    webhookSecret: options.webhookSecret ?? `whsec_${randomBytes(24).toString('base64')}`,
    autoDeliver: true,
    events: [],
    outbox: [],
    customers,
    sessions,
    subscriptions,
    schedules,
    invoices: [],
    charges,
    refunds,
    disputes,
    prorations: [],
    requests: [],
    async send(event) {
      if (!standIn.webhookUrl) throw new Error('the Stripe stand-in has no webhook URL');
      const payload = JSON.stringify(event);
      const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: standIn.webhookSecret });
      // Stripe retries a delivery that did not answer 2xx; a few quick tries are enough here.
      let status = 0;
      for (let attempt = 0; attempt < 3; attempt += 1) {
        status = await fetch(standIn.webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: payload }).then(
          (r) => r.status,
          () => 0,
        );
        if (status >= 200 && status < 300) break;
        await new Promise((resolve) => setTimeout(resolve, 200 * (attempt + 1)));
      }
      return status;
    },
    async flush() {
      const pending = standIn.outbox.splice(0);
      const statuses: number[] = [];
      for (const event of pending) statuses.push(await standIn.send(event));
      return statuses;
    },
    async completeCheckout(sessionId, payment = 'paid') {
      const session = sessionOf(sessionId);
      if (session.status !== 'open') throw new Error(`session ${sessionId} is ${String(session.status)}`);
      const made: Stripe.Event[] = [];
      session.status = 'complete';
      if (session.mode === 'subscription') {
        const priceId = ((session._line_items as Json[])[0] as Json).price as string;
        const subscription = newSubscription(session.customer as string, priceById(priceId), (session._subscription_metadata as Json | undefined) ?? {});
        session.subscription = subscription.id;
        session.payment_status = 'paid';
        made.push(event('customer.subscription.created', subscription));
      } else {
        session.payment_status = payment === 'paid' ? 'paid' : 'unpaid';
        session.payment_intent = id('pi');
        if (payment === 'paid') newCharge(session);
      }
      made.push(event('checkout.session.completed', session));
      await deliver(made);
      return made;
    },
    async settleAsyncPayment(sessionId, succeeded) {
      const session = sessionOf(sessionId);
      session.payment_status = succeeded ? 'paid' : 'unpaid';
      if (succeeded) newCharge(session);
      const made = [event(succeeded ? 'checkout.session.async_payment_succeeded' : 'checkout.session.async_payment_failed', session)];
      await deliver(made);
      return made;
    },
    async expireSession(sessionId) {
      const made = expire(sessionOf(sessionId));
      await deliver(made);
      return made;
    },
    async refundPayment(sessionId, amount) {
      const charge = chargeOfSession(sessionId);
      const left = (charge.amount as number) - (charge.amount_refunded as number);
      const refund = Math.min(left, amount ?? left);
      charge.amount_refunded = (charge.amount_refunded as number) + refund;
      charge.refunded = charge.amount_refunded === charge.amount;
      const made = [event('charge.refunded', charge)];
      await deliver(made);
      return made;
    },
    async disputePayment(sessionId, amount) {
      const charge = chargeOfSession(sessionId);
      const dispute: Json = {
        id: id('dp'),
        object: 'dispute',
        charge: charge.id,
        payment_intent: charge.payment_intent,
        amount: Math.min(charge.amount as number, amount ?? (charge.amount as number)),
        currency: charge.currency,
        status: 'needs_response',
        reason: 'fraudulent',
        created: now(),
        livemode: false,
      };
      disputes.set(dispute.id as string, dispute);
      charge.disputed = true;
      const made = [event('charge.dispute.created', dispute)];
      await deliver(made);
      return made;
    },
    async closeDispute(disputeId, status) {
      const dispute = disputes.get(disputeId);
      if (!dispute) throw missing('dispute', disputeId);
      dispute.status = status;
      const made = [event('charge.dispute.closed', dispute)];
      await deliver(made);
      return made;
    },
    async deleteCustomer(customerId) {
      const made = removeCustomer(customerId);
      await deliver(made);
      return made;
    },
    async endPeriod(subscriptionId) {
      const sub = subscriptionOf(subscriptionId);
      const item = itemOf(sub);
      let made: Stripe.Event[];
      if (sub.cancel_at_period_end) {
        sub.status = 'canceled';
        sub.ended_at = now();
        made = [event('customer.subscription.deleted', sub)];
      } else {
        const boundary = item.current_period_end as number;
        const schedule = sub.schedule ? schedules.get(sub.schedule as string) : undefined;
        const phase = schedule && schedule.status === 'active' ? nextPhase(schedule, boundary) : undefined;
        if (schedule && schedule.status === 'active' && phase === null && schedule.end_behavior === 'cancel') {
          sub.status = 'canceled';
          sub.ended_at = now();
          closeSchedule(schedule, 'completed');
          made = [event('customer.subscription.deleted', sub), event('subscription_schedule.completed', schedule)];
        } else {
          // The phase starting at the period's end sets the price the subscription renews on (no proration: nothing of the old period is left).
          if (phase) {
            const phaseItem = (phase.items as Json[])[0] as Json;
            item.price = priceById(phaseItem.price as string);
            if (phase.metadata) sub.metadata = { ...(sub.metadata as Json), ...(phase.metadata as Json) };
          }
          item.current_period_start = boundary;
          item.current_period_end = phase && typeof phase.end_date === 'number' ? phase.end_date : boundary + MONTH_SECONDS;
          const price = item.price as Json;
          standIn.invoices.push({
            subscription: sub.id as string,
            customer: sub.customer as string,
            amount: price.unit_amount as number,
            lookupKey: price.lookup_key as string,
            billingReason: 'subscription_cycle',
            periodStart: item.current_period_start as number,
            periodEnd: item.current_period_end as number,
          });
          made = [event('customer.subscription.updated', sub)];
          if (schedule && phase) {
            schedule.current_phase = { start_date: phase.start_date, end_date: phase.end_date };
            made.push(event('subscription_schedule.updated', schedule));
          } else if (schedule && schedule.status === 'active' && phase === null) {
            // the last phase ended: end_behavior release leaves the subscription as it is
            closeSchedule(schedule, 'released');
            made.push(event('subscription_schedule.released', schedule));
          }
        }
      }
      await deliver(made);
      return made;
    },
    async setSubscriptionStatus(subscriptionId, status) {
      const sub = subscriptionOf(subscriptionId);
      sub.status = status;
      const made = [event(status === 'canceled' ? 'customer.subscription.deleted' : 'customer.subscription.updated', sub)];
      await deliver(made);
      return made;
    },
    hold(method, path) {
      let arrived: () => void = () => undefined;
      let release: () => void = () => undefined;
      const arrivedP = new Promise<void>((resolve) => (arrived = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      holds.push({ key: `${method.toUpperCase()} ${path}`, arrived, released });
      return { arrived: arrivedP, release };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };

  /** Stripe keeps a deleted customer as a stub (`deleted: true`) and ends its subscriptions now. */
  function removeCustomer(customerId: string): Stripe.Event[] {
    const customer = customers.get(customerId);
    if (!customer || customer.deleted) throw missing('customer', customerId);
    const made: Stripe.Event[] = [];
    for (const sub of subscriptions.values()) {
      if (sub.customer !== customerId || sub.status === 'canceled') continue;
      sub.status = 'canceled';
      sub.ended_at = now();
      made.push(event('customer.subscription.deleted', sub));
    }
    made.push(event('customer.deleted', customer));
    customers.set(customerId, { id: customerId, object: 'customer', deleted: true });
    return made;
  }
  /** A customer named in a call's parameters must exist and not be deleted. */
  function liveCustomer(customerId: string | undefined): string {
    const customer = customerId === undefined ? undefined : customers.get(customerId);
    if (!customer || customer.deleted) throw new StripeFailure(400, 'invalid_request_error', `No such customer: '${String(customerId)}'`, 'resource_missing', 'customer');
    return customerId as string;
  }
  function sessionOf(sessionId: string): Json {
    const s = sessions.get(sessionId);
    if (!s) throw missing('checkout.session', sessionId);
    return s;
  }
  function newCharge(session: Json): void {
    const charge: Json = {
      id: id('ch'),
      object: 'charge',
      amount: session.amount_total,
      amount_refunded: 0,
      refunded: false,
      disputed: false,
      currency: session.currency,
      customer: session.customer,
      payment_intent: session.payment_intent,
      paid: true,
      status: 'succeeded',
      created: now(),
      livemode: false,
    };
    charges.set(charge.id as string, charge);
    session._charge = charge.id;
  }
  function chargeOfSession(sessionId: string): Json {
    const charge = charges.get(String(sessionOf(sessionId)._charge));
    if (!charge) throw new Error(`session ${sessionId} has no charge (not paid)`);
    return charge;
  }
  function subscriptionOf(subscriptionId: string): Json {
    const s = subscriptions.get(subscriptionId);
    if (!s) throw missing('subscription', subscriptionId);
    return s;
  }
  function itemOf(sub: Json): Json {
    return ((sub.items as Json).data as Json[])[0] as Json;
  }
  function priceById(priceId: string): Json {
    const p = prices.get(priceId);
    if (!p) throw missing('price', priceId);
    return p;
  }
  function newSubscription(customer: string, price: Json, metadata: Json): Json {
    const start = now();
    const subId = id('sub');
    const sub: Json = {
      id: subId,
      object: 'subscription',
      customer,
      status: 'active',
      cancel_at_period_end: false,
      canceled_at: null,
      ended_at: null,
      created: start,
      schedule: null,
      metadata,
      items: {
        object: 'list',
        data: [{ id: id('si'), object: 'subscription_item', subscription: subId, price, quantity: 1, current_period_start: start, current_period_end: start + MONTH_SECONDS }],
        has_more: false,
      },
    };
    subscriptions.set(subId, sub);
    return sub;
  }
  /**
   * At a period's end `boundary`: the schedule's phase that starts then (its current one ends then),
   * null when its current phase, the last, ends then, undefined when the current phase goes on.
   */
  function nextPhase(schedule: Json, boundary: number): Json | null | undefined {
    const current = schedule.current_phase as Json | null;
    if (!current || (current.end_date as number) > boundary) return undefined;
    return (schedule.phases as Json[]).find((p) => p.start_date === current.end_date) ?? null;
  }
  /** The schedule stops managing its subscription: `released` (it goes on as it is), `completed` or `canceled`. */
  function closeSchedule(schedule: Json, status: 'released' | 'completed' | 'canceled'): void {
    const sub = schedule.subscription ? subscriptions.get(schedule.subscription as string) : undefined;
    schedule.status = status;
    schedule.current_phase = null;
    if (status === 'released') {
      schedule.released_at = now();
      schedule.released_subscription = schedule.subscription;
      schedule.subscription = null;
    } else if (status === 'completed') {
      schedule.completed_at = now();
    } else {
      schedule.canceled_at = now();
    }
    if (sub && sub.schedule === schedule.id) sub.schedule = null;
  }
  function scheduleOf(scheduleId: string): Json {
    const s = schedules.get(scheduleId);
    if (!s) throw missing('subscription_schedule', scheduleId);
    return s;
  }
  /** A schedule as the API answers it: `expand[]=phases.items.price` gives each phase item its price object. */
  function scheduleView(schedule: Json, expand: unknown): Json {
    const view = structuredClone(publicView(schedule));
    if (Array.isArray(expand) && expand.includes('phases.items.price')) {
      for (const phase of view.phases as Json[]) for (const item of phase.items as Json[]) item.price = priceById(item.price as string);
    }
    return view;
  }
  /**
   * The phases of a schedule update, as Stripe reads them: the first starts at the current phase's
   * start (which cannot move); each ends at its `end_date`, or after `duration` (months), or, the last
   * one without either, after one interval of its price; the next starts where it ends.
   */
  function phasesOf(params: Json, schedule: Json): Json[] {
    const given = params.phases as Json[] | undefined;
    if (!Array.isArray(given) || given.length === 0) throw new StripeFailure(400, 'invalid_request_error', 'Missing required param: phases.', undefined, 'phases');
    const current = schedule.current_phase as Json | null;
    let start = given[0]!.start_date === 'now' ? now() : Number(given[0]!.start_date);
    if (!Number.isFinite(start)) throw new StripeFailure(400, 'invalid_request_error', 'The first phase needs a start_date.', undefined, 'phases[0][start_date]');
    if (current && start !== current.start_date) {
      throw new StripeFailure(400, 'invalid_request_error', 'You can not modify the start date of the current phase.', undefined, 'phases[0][start_date]');
    }
    return given.map((phase, i) => {
      const items = ((phase.items as Json[] | undefined) ?? []).map((it) => ({ price: priceById(it.price as string).id as string, quantity: Number(it.quantity ?? 1) }));
      if (items.length === 0) throw new StripeFailure(400, 'invalid_request_error', `Missing required param: phases[${i}][items].`, undefined, `phases[${i}][items]`);
      const duration = phase.duration as Json | undefined;
      const months = duration ? Number(duration.interval_count ?? 1) * (duration.interval === 'year' ? 12 : 1) : null;
      if (phase.end_date !== undefined && duration) throw new StripeFailure(400, 'invalid_request_error', `phases[${i}]: end_date and duration cannot both be set.`);
      if (phase.end_date === undefined && !duration && i < given.length - 1) {
        throw new StripeFailure(400, 'invalid_request_error', `phases[${i}] needs an end_date or a duration: only the last phase may leave both out.`);
      }
      const end = phase.end_date !== undefined ? Number(phase.end_date) : start + (months ?? 1) * MONTH_SECONDS;
      if (!(end > start)) throw new StripeFailure(400, 'invalid_request_error', `phases[${i}] ends before it starts.`);
      const made: Json = { start_date: start, end_date: end, items, proration_behavior: phase.proration_behavior ?? 'create_prorations', metadata: phase.metadata ?? {} };
      start = end;
      return made;
    });
  }
  /**
   * Moves the subscription to another price now, billed by Stripe's proration rules (see
   * `prorations`): `restart` starts a new period (`billing_cycle_anchor: now`).
   */
  function changePrice(sub: Json, priceId: string, behavior: string, restart: boolean): void {
    const item = itemOf(sub);
    const oldAmount = (item.price as Json).unit_amount as number;
    item.price = priceById(priceId);
    const newAmount = (item.price as Json).unit_amount as number;
    const [start, end, at] = [item.current_period_start as number, item.current_period_end as number, now()];
    const unused = Math.max(0, Math.min(1, (end - at) / Math.max(1, end - start)));
    if (restart) {
      item.current_period_start = at;
      item.current_period_end = at + MONTH_SECONDS;
    }
    const amount = behavior === 'none' ? 0 : restart ? newAmount - Math.round(oldAmount * unused) : Math.round((newAmount - oldAmount) * unused);
    standIn.prorations.push({ subscription: sub.id as string, customer: sub.customer as string, amount, invoicedNow: behavior === 'always_invoice' || restart, periodRestarted: restart, behavior });
  }
  function publicView(o: Json): Json {
    return Object.fromEntries(Object.entries(o).filter(([k]) => !k.startsWith('_')));
  }
  function event(type: string, object: Json): Stripe.Event {
    const e = {
      id: id('evt'),
      object: 'event',
      api_version: Stripe.API_VERSION,
      created: now(),
      type,
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      data: { object: structuredClone(publicView(object)) },
    } as unknown as Stripe.Event;
    standIn.events.push(e);
    return e;
  }
  async function deliver(made: Stripe.Event[]): Promise<void> {
    if (!standIn.autoDeliver || !standIn.webhookUrl) {
      standIn.outbox.push(...made);
      return;
    }
    for (const e of made) await standIn.send(e);
  }
  function expire(session: Json): Stripe.Event[] {
    if (session.status !== 'open') throw new StripeFailure(400, 'invalid_request_error', `Only Checkout Sessions with a status of open can be expired; this one is ${String(session.status)}.`);
    session.status = 'expired';
    return [event('checkout.session.expired', session)];
  }

  const list = (data: Json[], url: string): Json => ({ object: 'list', data, has_more: false, url });

  /** The REST endpoints: answers the object, or throws a StripeFailure; `after` runs once answered. */
  function api(method: string, path: string, params: Json, after: Array<() => Promise<void>>): Json {
    const parts = path.split('/').filter(Boolean);
    const isId = (p: string, i: number) => i >= 2 && /^(cus|cs|sub|price|ch|dp)_/.test(p);
    const route = `${method} /${parts.map((p, i) => (isId(p, i) ? ':id' : p)).join('/')}`;
    const target = parts.find(isId) ?? '';
    switch (route) {
      case 'POST /v1/customers': {
        const customer = { id: id('cus'), object: 'customer', email: params.email ?? null, name: params.name ?? null, metadata: params.metadata ?? {}, created: now() };
        customers.set(customer.id, customer);
        return customer;
      }
      case 'GET /v1/customers/:id': {
        const c = customers.get(target);
        if (!c) throw missing('customer', target);
        return c;
      }
      case 'DELETE /v1/customers/:id': {
        const made = removeCustomer(target);
        after.push(() => deliver(made));
        return customers.get(target) as Json;
      }
      case 'GET /v1/prices': {
        const keys = (params.lookup_keys as string[] | undefined) ?? [];
        return list([...prices.values()].filter((p) => keys.length === 0 || keys.includes(p.lookup_key as string)), '/v1/prices');
      }
      case 'POST /v1/checkout/sessions': {
        const mode = params.mode as string;
        if (mode !== 'payment' && mode !== 'subscription') throw new StripeFailure(400, 'invalid_request_error', 'mode must be payment or subscription');
        const customer = liveCustomer(params.customer as string | undefined);
        const items = ((params.line_items as Json[] | undefined) ?? []).map((li) => ({ price: li.price as string, quantity: Number(li.quantity ?? 1) }));
        if (items.length === 0) throw new StripeFailure(400, 'invalid_request_error', 'line_items is required');
        const amount = items.reduce((sum, li) => sum + (priceById(li.price).unit_amount as number) * li.quantity, 0);
        if (mode === 'payment' && amount < STRIPE_MINIMUM_CHARGE) {
          throw new StripeFailure(400, 'invalid_request_error', `The Checkout Session's total amount due must add up to at least $${(STRIPE_MINIMUM_CHARGE / 100).toFixed(2)} ${BILLING_CURRENCY}`);
        }
        const sessionId = id('cs_test');
        const session: Json = {
          id: sessionId,
          object: 'checkout.session',
          mode,
          status: 'open',
          payment_status: 'unpaid',
          customer,
          client_reference_id: params.client_reference_id ?? null,
          metadata: params.metadata ?? {},
          amount_total: amount,
          currency: BILLING_CURRENCY,
          success_url: params.success_url ?? null,
          cancel_url: params.cancel_url ?? null,
          url: `${standIn.url}/checkout/${sessionId}`,
          expires_at: params.expires_at ? Number(params.expires_at) : now() + 86_400,
          created: now(),
          subscription: null,
          payment_intent: null,
          livemode: false,
          _line_items: items,
          _subscription_metadata: (params.subscription_data as Json | undefined)?.metadata ?? {},
        };
        sessions.set(sessionId, session);
        return session;
      }
      case 'GET /v1/checkout/sessions': {
        const created = params.created as Json | undefined;
        const since = created?.gte !== undefined ? Number(created.gte) : 0;
        const found = [...sessions.values()].filter(
          (s) =>
            (!params.customer || s.customer === params.customer) &&
            (!params.status || s.status === params.status) &&
            (!params.payment_intent || s.payment_intent === params.payment_intent) &&
            (s.created as number) >= since,
        );
        return list(found.reverse().map(publicView), '/v1/checkout/sessions');
      }
      case 'GET /v1/checkout/sessions/:id':
        return sessionOf(target);
      case 'POST /v1/checkout/sessions/:id/expire': {
        const session = sessionOf(target);
        const made = expire(session);
        after.push(() => deliver(made));
        return session;
      }
      case 'GET /v1/charges/:id': {
        const charge = charges.get(target);
        if (!charge) throw missing('charge', target);
        return charge;
      }
      case 'GET /v1/disputes': {
        const found = [...disputes.values()].filter((d) => (!params.charge || d.charge === params.charge) && (!params.payment_intent || d.payment_intent === params.payment_intent));
        return list(found.reverse(), '/v1/disputes');
      }
      case 'POST /v1/billing_portal/sessions': {
        const customer = liveCustomer(params.customer as string | undefined);
        return { id: id('bps'), object: 'billing_portal.session', customer, return_url: params.return_url ?? null, url: `${standIn.url}/portal/${customer}`, created: now(), livemode: false };
      }
      case 'GET /v1/subscriptions/:id':
        return subscriptionOf(target);
      case 'POST /v1/subscriptions/:id': {
        const sub = subscriptionOf(target);
        if (sub.status === 'canceled') throw new StripeFailure(400, 'invalid_request_error', 'A canceled subscription can only update its cancellation_details and metadata.');
        const previous: Json = {};
        if (sub.schedule && (params.cancel_at_period_end !== undefined || params.cancel_at !== undefined)) {
          throw new StripeFailure(
            400,
            'invalid_request_error',
            `The subscription is managed by the subscription schedule \`${String(sub.schedule)}\`, and updating any cancelation behavior directly is not allowed. Please update the schedule instead.`,
          );
        }
        if (params.cancel_at_period_end !== undefined) {
          previous.cancel_at_period_end = sub.cancel_at_period_end;
          sub.cancel_at_period_end = params.cancel_at_period_end === 'true';
        }
        const newItems = params.items as Json[] | undefined;
        if (newItems?.[0]?.price) {
          previous.items = structuredClone(sub.items);
          // `billing_cycle_anchor[type]=now` (this API version), or `billing_cycle_anchor=now` (earlier ones)
          const anchor = params.billing_cycle_anchor;
          const restart = anchor === 'now' || (typeof anchor === 'object' && anchor !== null && (anchor as Json).type === 'now');
          changePrice(sub, newItems[0].price as string, (params.proration_behavior as string | undefined) ?? 'create_prorations', restart);
          // A schedule's current phase follows the subscription's new period.
          const schedule = sub.schedule ? schedules.get(sub.schedule as string) : undefined;
          if (restart && schedule?.current_phase) {
            const item = itemOf(sub);
            schedule.current_phase = { start_date: item.current_period_start, end_date: item.current_period_end };
          }
        }
        if (params.metadata) sub.metadata = { ...(sub.metadata as Json), ...(params.metadata as Json) };
        const made = [event('customer.subscription.updated', sub)];
        (made[0] as unknown as { data: Json }).data.previous_attributes = previous;
        after.push(() => deliver(made));
        return sub;
      }
      case 'DELETE /v1/subscriptions/:id': {
        const sub = subscriptionOf(target);
        sub.status = 'canceled';
        sub.canceled_at = now();
        sub.ended_at = now();
        const made = [event('customer.subscription.deleted', sub)];
        // Cancelling a subscription cancels the schedule managing it.
        const schedule = sub.schedule ? schedules.get(sub.schedule as string) : undefined;
        if (schedule) {
          closeSchedule(schedule, 'canceled');
          made.push(event('subscription_schedule.canceled', schedule));
        }
        after.push(() => deliver(made));
        return sub;
      }
      case 'POST /v1/subscription_schedules': {
        // Only the form the service uses: a schedule made from a live subscription, its one phase the current period.
        if (typeof params.from_subscription !== 'string') {
          throw new StripeFailure(400, 'invalid_request_error', 'The Stripe stand-in makes schedules only from_subscription.', undefined, 'from_subscription');
        }
        if (params.phases !== undefined) {
          throw new StripeFailure(400, 'invalid_request_error', 'You cannot set `phases` if `from_subscription` is set.', undefined, 'phases');
        }
        const sub = subscriptionOf(params.from_subscription);
        if (sub.status === 'canceled') throw new StripeFailure(400, 'invalid_request_error', 'A canceled subscription cannot be attached to a schedule.', undefined, 'from_subscription');
        if (sub.schedule) {
          throw new StripeFailure(400, 'invalid_request_error', `You cannot migrate a subscription that is already attached to a schedule: \`${String(sub.schedule)}\`.`, undefined, 'from_subscription');
        }
        const item = itemOf(sub);
        const schedule: Json = {
          id: id('sub_sched'),
          object: 'subscription_schedule',
          customer: sub.customer,
          subscription: sub.id,
          status: 'active',
          end_behavior: sub.cancel_at_period_end ? 'cancel' : 'release',
          current_phase: { start_date: item.current_period_start, end_date: item.current_period_end },
          phases: [
            {
              start_date: item.current_period_start,
              end_date: item.current_period_end,
              items: [{ price: (item.price as Json).id, quantity: item.quantity ?? 1 }],
              proration_behavior: 'create_prorations',
              metadata: structuredClone(sub.metadata ?? {}),
            },
          ],
          metadata: params.metadata ?? {},
          created: now(),
          canceled_at: null,
          completed_at: null,
          released_at: null,
          released_subscription: null,
          test_clock: null,
          livemode: false,
        };
        schedules.set(schedule.id as string, schedule);
        sub.schedule = schedule.id;
        sub.cancel_at_period_end = false;
        const made = [event('subscription_schedule.created', schedule), event('customer.subscription.updated', sub)];
        (made[1] as unknown as { data: Json }).data.previous_attributes = { schedule: null };
        after.push(() => deliver(made));
        return scheduleView(schedule, params.expand);
      }
      case 'GET /v1/subscription_schedules/:id':
        return scheduleView(scheduleOf(target), params.expand);
      case 'POST /v1/subscription_schedules/:id': {
        const schedule = scheduleOf(target);
        if (schedule.status !== 'active' && schedule.status !== 'not_started') {
          throw new StripeFailure(400, 'invalid_request_error', `You cannot update a subscription schedule that is currently in the \`${String(schedule.status)}\` status. It must be in \`not_started\` or \`active\`.`);
        }
        const made: Stripe.Event[] = [];
        if (params.phases !== undefined) {
          const phases = phasesOf(params, schedule);
          const sub = subscriptionOf(schedule.subscription as string);
          const first = phases[0]!;
          const price = ((first.items as Json[])[0] as Json).price as string;
          // A change to the current phase's price changes the subscription now, prorated as the request says.
          if (price !== (itemOf(sub).price as Json).id) {
            changePrice(sub, price, (params.proration_behavior as string | undefined) ?? 'create_prorations', false);
            made.push(event('customer.subscription.updated', sub));
          }
          schedule.phases = phases;
          schedule.current_phase = { start_date: first.start_date, end_date: first.end_date };
        }
        if (params.end_behavior !== undefined) schedule.end_behavior = params.end_behavior;
        if (params.metadata !== undefined) schedule.metadata = { ...(schedule.metadata as Json), ...(params.metadata as Json) };
        made.unshift(event('subscription_schedule.updated', schedule));
        after.push(() => deliver(made));
        return scheduleView(schedule, params.expand);
      }
      case 'POST /v1/refunds': {
        // A refund of what is left of a PaymentIntent's charge (or `amount` of it): `charge.refunded` follows.
        const charge = [...charges.values()].find((c) => c.payment_intent === params.payment_intent);
        if (!charge) throw missing('payment_intent', String(params.payment_intent));
        const left = (charge.amount as number) - (charge.amount_refunded as number);
        if (left === 0) throw new StripeFailure(400, 'invalid_request_error', `Charge ${String(charge.id)} has already been refunded.`, 'charge_already_refunded');
        const amount = params.amount === undefined ? left : Number(params.amount);
        if (!(amount > 0) || amount > left) {
          throw new StripeFailure(400, 'invalid_request_error', `Refund amount (${amount}) is greater than unrefunded amount on charge (${left}).`, 'amount_too_large', 'amount');
        }
        const refund: Json = { id: id('re'), object: 'refund', amount, charge: charge.id, payment_intent: charge.payment_intent, currency: charge.currency, status: 'succeeded', metadata: params.metadata ?? {}, created: now() };
        refunds.set(refund.id as string, refund);
        charge.amount_refunded = (charge.amount_refunded as number) + amount;
        charge.refunded = charge.amount_refunded === charge.amount;
        const made = [event('charge.refunded', charge)];
        after.push(() => deliver(made));
        return refund;
      }
      case 'POST /v1/subscription_schedules/:id/release': {
        const schedule = scheduleOf(target);
        if (schedule.status !== 'active' && schedule.status !== 'not_started') {
          throw new StripeFailure(400, 'invalid_request_error', `You cannot release a subscription schedule that is currently in the \`${String(schedule.status)}\` status. It must be in \`not_started\` or \`active\`.`);
        }
        const subId = schedule.subscription as string | null;
        closeSchedule(schedule, 'released');
        const made = [event('subscription_schedule.released', schedule)];
        const sub = subId ? subscriptions.get(subId) : undefined;
        if (sub) {
          made.push(event('customer.subscription.updated', sub));
          (made[1] as unknown as { data: Json }).data.previous_attributes = { schedule: schedule.id };
        }
        after.push(() => deliver(made));
        return scheduleView(schedule, params.expand);
      }
      default:
        throw new StripeFailure(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path}). The Stripe stand-in speaks only what the service uses.`);
    }
  }

  function checkoutPage(session: Json): string {
    const amount = ((session.amount_total as number) / 100).toFixed(2);
    const what = session.mode === 'subscription' ? 'Subscription' : 'Credit purchase';
    const form = (action: string, label: string) => `<form method="post" action="/checkout/${escapeHtml(session.id as string)}/${action}"><button>${label}</button></form>`;
    const body =
      session.status === 'open'
        ? `${form('pay', `Pay ${amount} ${BILLING_CURRENCY.toUpperCase()}`)}${session.mode === 'payment' ? form('pay-later', 'Pay by bank transfer (settles later)') : ''}${form('cancel', 'Cancel')}`
        : `<p>This session is ${escapeHtml(String(session.status))} (${escapeHtml(String(session.payment_status))}).</p>`;
    return `<!doctype html><html><head><meta charset="utf-8"><title>Stripe stand-in checkout</title></head><body><h1>${what}</h1><p>Local Stripe stand-in: no real payment is made.</p>${body}</body></html>`;
  }

  async function page(req: http.IncomingMessage, res: http.ServerResponse, parts: string[]): Promise<void> {
    const session = sessions.get(parts[1] ?? '');
    if (!session) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('No such checkout session');
      return;
    }
    const action = parts[2];
    if (req.method === 'GET' && !action) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(checkoutPage(session));
      return;
    }
    if (req.method === 'POST' && (action === 'pay' || action === 'pay-later') && session.status === 'open') {
      await standIn.completeCheckout(session.id as string, action === 'pay' ? 'paid' : 'pending');
      res.writeHead(303, { location: String(session.success_url ?? `/checkout/${String(session.id)}`) }).end();
      return;
    }
    if (req.method === 'POST' && action === 'cancel') {
      res.writeHead(303, { location: String(session.cancel_url ?? `/checkout/${String(session.id)}`) }).end();
      return;
    }
    res.writeHead(409, { 'content-type': 'text/plain' }).end(`This session is ${String(session.status)}.`);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://standin');
    const method = req.method ?? 'GET';
    const parts = url.pathname.split('/').filter(Boolean);
    if (parts[0] === 'checkout' || parts[0] === 'portal') {
      if (parts[0] === 'portal') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>Billing portal</title><h1>Billing portal (Stripe stand-in)</h1>');
        return;
      }
      await page(req, res, parts);
      return;
    }
    const key = `${method} ${url.pathname}`;
    standIn.requests.push(key);
    const held = holds.findIndex((h) => h.key === key);
    if (held >= 0) {
      const [h] = holds.splice(held, 1);
      h!.arrived();
      await h!.released;
    }
    const reply = (status: number, body: Json) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') }).end(JSON.stringify(body));
    };
    if (!/^Bearer \S+/.test(req.headers.authorization ?? '')) {
      reply(401, { error: { type: 'invalid_request_error', message: 'You did not provide an API key.' } });
      return;
    }
    const idempotencyKey = method === 'POST' ? req.headers['idempotency-key'] : undefined;
    const replayKey = typeof idempotencyKey === 'string' ? `${key} ${idempotencyKey}` : null;
    const replayed = replayKey ? idempotent.get(replayKey) : undefined;
    if (replayed) {
      res.setHeader('idempotent-replayed', 'true');
      reply(replayed.status, replayed.body);
      return;
    }
    const params = method === 'GET' || method === 'DELETE' ? parseStripeForm(url.search.slice(1)) : parseStripeForm(Buffer.concat(chunks).toString('utf8'));
    const after: Array<() => Promise<void>> = [];
    let status = 200;
    let body: Json;
    try {
      body = publicView(api(method, url.pathname, params, after));
    } catch (err) {
      if (!(err instanceof StripeFailure)) throw err;
      status = err.status;
      body = { error: { type: err.type, message: err.message, ...(err.code ? { code: err.code } : {}), ...(err.param ? { param: err.param } : {}) } };
    }
    if (replayKey) idempotent.set(replayKey, { status, body });
    reply(status, body);
    // Like Stripe, events about a change are sent after the call that made it has answered.
    for (const step of after) await step();
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: 'api_error', message: String(err) } }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  standIn.url = `http://${options.host ?? '127.0.0.1'}:${address.port}`;
  return standIn;
}
