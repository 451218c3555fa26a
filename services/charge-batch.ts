import { currentPeriod, type ChargeSpec } from './credits';
import { newId } from './ids';
import { chargeBatchCalls } from './metrics';
import type { ScoredRows } from './predictions';
import { sql, type Queryable } from './sql';

/**
 * One small paid call, scored already, to charge together with its stored rows: a settled charge
 * (credits.ts) that always carries its model guard; `reference` is also every stored row's
 * `http_request_id`.
 */
export type AnsweredCall = Omit<ChargeSpec, 'state' | 'model'> & {
  model: NonNullable<ChargeSpec['model']>;
  rows: ScoredRows;
  /** The API key the call was admitted on without reading it (api-keys.ts deferredKeyCall): checked here. */
  keyId: string | null;
};

/**
 * How one call of a batch went:
 * - `charged`: its ledger row, settled reservation and rows are committed; `remaining` is what the
 *   account had left right after this call's charge;
 * - `key_refused`: nothing written, the call's unread key (`keyId`) may no longer call (revoked, ended,
 *   expired or gone): the caller answers the key's 401;
 * - `model_changed`: nothing written, the model no longer serves that version;
 * - `not_charged`: nothing written, the account could not cover its calls of the batch together (or
 *   its month is not opened yet): the call is to be charged alone, which decides between a charge and
 *   402 exactly as any single charge does.
 */
export type AnsweredCallOutcome =
  | { kind: 'charged'; reservationId: string; remaining: number }
  | { kind: 'key_refused' }
  | { kind: 'model_changed' }
  | { kind: 'not_charged' };

/**
 * The charges of several answered calls in one statement, each call as the single-call statement
 * (credits.ts, chargeCtes + the stored rows) would have charged it in the calls' order: its key's
 * guard (a call admitted without reading its key is charged only if the key may still call), its model
 * guard, then per account one row lock for all its guarded calls, the allowance drawn first and the
 * purchased balance after (running sums give each call's own before and after), one `charge` ledger
 * row, one `settled` reservation and the stored rows per call. An account that cannot cover the sum
 * of its calls is not charged at all here (`not_charged`). Accounts are locked in id order, so two
 * batches never wait for each other in a cycle.
 */
const CHARGE_ANSWERED_CALLS_SQL = `
with calls as (
  select * from unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::int[], $9::int[], $12::text[])
    with ordinality as c(id, account_id, workspace_id, amount, operation, reference, model_id, version, hold_seconds, key_id, ord)
), keyed as (
  select c.*, c.key_id is null or exists (
           select 1 from api_keys k
            where k.id = c.key_id and k.workspace_id = c.workspace_id and (k.revoked_at is null or k.revoked_at > now())
              and (k.expires_at is null or k.expires_at > now()) and (k.ends_at is null or k.ends_at > now())) as key_ok
    from calls c
), guarded as (
  select c.* from keyed c
   where c.key_ok and exists (select 1 from models m where m.id = c.model_id and m.workspace_id = c.workspace_id and m.status = 'serving' and m.current_version = c.version)
), totals as (
  select account_id, sum(amount)::int as total from guarded group by account_id
), old as (
  select a.id, a.allowance_remaining as a0, a.purchased_balance as b0, t.total
    from accounts a join totals t on t.account_id = a.id
   where a.allowance_period >= $10 and a.allowance_remaining::bigint + a.purchased_balance >= t.total
   order by a.id
   for update of a
), upd as (
  update accounts a
     set allowance_remaining = old.a0 - least(old.a0, old.total),
         purchased_balance = old.b0 - (old.total - least(old.a0, old.total))
    from old
   where a.id = old.id
  returning a.id, old.a0, old.b0, a.allowance_period as period
), running as (
  select g.*, upd.a0, upd.b0, upd.period, (sum(g.amount) over (partition by g.account_id order by g.ord))::int as spent
    from guarded g join upd on upd.id = g.account_id
), steps as (
  select r.*,
         r.a0 - least(r.a0, r.spent - r.amount) as a_before, r.b0 - ((r.spent - r.amount) - least(r.a0, r.spent - r.amount)) as b_before,
         r.a0 - least(r.a0, r.spent) as a_after, r.b0 - (r.spent - least(r.a0, r.spent)) as b_after
    from running r
), led as (
  insert into credit_ledger (id, account_id, workspace_id, kind, operation, allowance_delta, balance_delta, allowance_after, balance_after, reference, created_at)
  select s.id, s.account_id, s.workspace_id, 'charge', s.operation, s.a_after - s.a_before, s.b_after - s.b_before, s.a_after, s.b_after, s.reference, now() from steps s
), reservation as (
  insert into credit_reservations (id, account_id, workspace_id, operation, reference, from_allowance, from_balance, period, state, deadline, created_at, closed_at)
  select s.id, s.account_id, s.workspace_id, s.operation, s.reference, s.a_before - s.a_after, s.b_before - s.b_after, s.period, 'settled',
         now() + make_interval(secs => s.hold_seconds), now(), now()
    from steps s
), stored as (
  insert into prediction_calls (id, model_id, workspace_id, version_number, http_request_id, first_index, row_count, features, output, created_at)
  select x.id, s.model_id, s.workspace_id, s.version, s.reference, 0, x.row_count, x.features, x.output, now()
    from json_to_recordset($11::json) as x(call int, id text, row_count int, features json, output json) join steps s on s.ord = x.call
)
select c.ord, c.key_ok, g.ord is not null as model_current, s.a_after, s.b_after
  from keyed c left join guarded g on g.ord = c.ord left join steps s on s.ord = c.ord
 order by c.ord`;

interface OutcomeRow {
  key_ok: boolean;
  model_current: boolean;
  a_after: number | null;
  b_after: number | null;
}

/** One statement for `calls`; their outcomes in the same order. */
async function chargeAnsweredCalls(db: Queryable, calls: AnsweredCall[], now: Date): Promise<Array<AnsweredCallOutcome>> {
  const ids = calls.map(() => newId('event'));
  const stored = calls.map(({ rows }, i) => ({ call: i + 1, id: rows.stem, row_count: rows.outputs.length, features: rows.features, output: rows.outputs }));
  const rows = await sql<OutcomeRow>(db, CHARGE_ANSWERED_CALLS_SQL, [
    ids,
    calls.map((c) => c.accountId),
    calls.map((c) => c.workspaceId),
    calls.map((c) => c.amount),
    calls.map((c) => c.operation),
    calls.map((c) => c.reference),
    calls.map((c) => c.model.id),
    calls.map((c) => c.model.version),
    calls.map((c) => c.holdSeconds),
    currentPeriod(now),
    JSON.stringify(stored),
    calls.map((c) => c.keyId),
  ]);
  chargeBatchCalls.observe(calls.length);
  return rows.map((row, i): AnsweredCallOutcome => {
    if (!row.key_ok) return { kind: 'key_refused' };
    if (!row.model_current) return { kind: 'model_changed' };
    if (row.a_after === null || row.b_after === null) return { kind: 'not_charged' };
    return { kind: 'charged', reservationId: ids[i]!, remaining: row.a_after + row.b_after };
  });
}

interface Waiting {
  call: AnsweredCall;
  resolve: (outcome: AnsweredCallOutcome) => void;
  reject: (err: unknown) => void;
}

/**
 * Charges answered calls with one statement in flight per process: a call arriving while a charge
 * statement runs waits for it and joins the next one. An idle service charges each call alone, at
 * once; a busy one takes an account's row lock once per batch instead of once per call (the calls of
 * one account queued on that lock one statement at a time). A statement that fails fails its calls,
 * none of which wrote anything (one statement, one transaction).
 */
export class AnsweredCallCharger {
  private readonly waiting: Waiting[] = [];
  private running = false;

  constructor(
    private readonly db: Queryable,
    private readonly maxCalls = 64,
  ) {}

  charge(call: AnsweredCall): Promise<AnsweredCallOutcome> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ call, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, this.maxCalls);
        try {
          const outcomes = await chargeAnsweredCalls(
            this.db,
            batch.map((w) => w.call),
            new Date(),
          );
          batch.forEach((w, i) => w.resolve(outcomes[i]!));
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.running = false;
    }
  }
}

const chargers = new WeakMap<Queryable, AnsweredCallCharger>();

/** The charger of a call pool (one per pool, so one statement in flight per process and pool). */
export function answeredCallChargerFor(db: Queryable): AnsweredCallCharger {
  let charger = chargers.get(db);
  if (!charger) {
    charger = new AnsweredCallCharger(db);
    chargers.set(db, charger);
  }
  return charger;
}
