import type { EntityManager } from '@mikro-orm/postgresql';
import { ModelVersionSchema, type Model } from '../db/entities';
import { classLabelReader } from '../engines/tabular';
import { AppError } from './errors';
import { RUN_STEM_LENGTH } from './ids';

/**
 * Verdict thresholds, against the validation score the serving version earned at training time:
 * - higher-is-better metrics (ROC AUC, accuracy): holding while observed ≥ expected − 0.05, weak while
 *   ≥ expected − 0.15 and above the lazy answer's score, dropped below;
 * - lower-is-better metrics (RMSE, log loss): holding while observed ≤ 1.2 × expected, weak while
 *   ≤ 1.5 × expected and below the lazy answer's score, dropped beyond.
 */
export const PERFORMANCE_THRESHOLDS = { holdingGap: 0.05, weakGap: 0.15, holdingRatio: 1.2, weakRatio: 1.5 } as const;

interface Observed {
  matched: number;
  score: number | null;
}

// A matched outcome's prediction is found by its call (the request_id's first 22 characters, the
// primary key of prediction_calls) and its position in the call (services/ids.ts newIdRun). Each call's
// outputs (one json array, stored out of line) are read and parsed once, into a jsonb array whose
// elements are then reached by their index: `->` on the stored json read and parsed the whole array
// again for each of its outcomes, so 10,000 outcomes of one 10,000-row call took 36-45 s of a backend
// and a connection (a twenty-sixth probe). The outputs' key order does not matter here.
const MATCHED_CTE = `with p as (select ?::text as model_id, ?::timestamptz as since),
o as materialized (
  select left(o.prediction_id, ${RUN_STEM_LENGTH}) as call_id, prediction_position(o.prediction_id) as pos, o.actual
    from outcomes o, p where o.model_id = p.model_id and o.prediction_id is not null
),
calls as materialized (
  select c.id, c.first_index, c.output::jsonb as output
    from prediction_calls c, p
   where c.id in (select call_id from o) and c.model_id = p.model_id and c.created_at >= p.since
),
m as (select c.output -> (o.pos - c.first_index) as output, o.actual from o join calls c on c.id = o.call_id)`;

/**
 * The observed score over predictions matched to outcomes, aggregated in PostgreSQL so that a year
 * of pairs never travels to the API process. ROC AUC uses average ranks for ties (Mann-Whitney).
 * An outcome names a class by the model's label (as outcomes are stored since classLabelReader) or, stored
 * before, by the class's text; jsonb compares numbers by value, so 1e-7 is matched however PostgreSQL
 * spells it (as text it is 0.0000001, which matched no class).
 */
async function observedScore(em: EntityManager, metric: string, modelId: string, since: Date, classes: string[]): Promise<Observed> {
  const connection = em.getConnection();
  if (metric === 'rmse') {
    // The errors are scaled by the largest before they are squared: avg() of float8 also sums the
    // squares of its inputs' deviations, so squared errors beyond about 1e154 (errors beyond about
    // 1e77, of a regression that trains on targets up to ±1e150) overflowed, and the route answered
    // 503 for good, as did the daily model.stale check (a sixteenth probe). Scaled, every square is
    // at most 1 and their sum at most the number of pairs. An outcome stored before `actual` was
    // checked ("0x10", "1e400") is no pair that can be judged: a cast of it failed the whole query.
    const [row] = await connection.execute<Array<{ n: number; score: number | null }>>(
      `${MATCHED_CTE}, e as (select (output->>'prediction')::float8 - a as d from (select output, judged_number(actual) as a from m) j where a is not null),
       s as (select count(*)::int as n, max(abs(d)) as top from e)
       select s.n, case when s.top = 0 then 0::float8 else s.top * sqrt((select sum(power(d / s.top, 2)) from e) / s.n) end as score from s`,
      [modelId, since],
    );
    return { matched: row?.n ?? 0, score: row?.score ?? null };
  }
  if (metric === 'roc_auc') {
    const positive = classes[classes.length - 1] ?? '';
    const [row] = await connection.execute<Array<{ n: number; positives: number; rank_sum: number | null }>>(
      `${MATCHED_CTE}, s as (select coalesce((output->>?)::float8, 0) as score, (actual = ?::jsonb or actual #>> '{}' = ?) as pos from m),
       r as (select pos, rank() over (order by score) + (count(*) over (partition by score) - 1) / 2.0 as rk from s)
       select count(*)::int as n, coalesce(sum(case when pos then 1 else 0 end), 0)::int as positives, sum(case when pos then rk else 0 end)::float8 as rank_sum from r`,
      [modelId, since, `proba_${positive}`, JSON.stringify(classLabelReader(classes)(positive)), positive],
    );
    const n = row?.n ?? 0;
    const positives = row?.positives ?? 0;
    const negatives = n - positives;
    if (n === 0 || positives === 0 || negatives === 0) return { matched: n, score: null };
    return { matched: n, score: ((row?.rank_sum ?? 0) - (positives * (positives + 1)) / 2) / (positives * negatives) };
  }
  // log loss (multiclass): each outcome's class found among the model's (label, text) pairs
  const labelOf = classLabelReader(classes);
  const pairs = JSON.stringify(classes.map((c) => [labelOf(c), c]));
  const [row] = await connection.execute<Array<{ n: number; score: number | null }>>(
    `${MATCHED_CTE} select count(*)::int as n, avg(-ln(greatest(1e-15, coalesce((output->>(
       select 'proba_' || (k->>1) from jsonb_array_elements(?::jsonb) k where k->0 = actual or k->>1 = actual #>> '{}' limit 1))::float8, 0)))) as score from m`,
    [modelId, since, pairs],
  );
  return { matched: row?.n ?? 0, score: row?.score ?? null };
}

/** Performance of a model over the last `days`; 503 PERFORMANCE_UNAVAILABLE when the logs cannot be read. */
export async function modelPerformance(em: EntityManager, model: Model, days: number) {
  try {
    return await computePerformance(em, model, days);
  } catch (err) {
    throw new AppError('PERFORMANCE_UNAVAILABLE', 503, 'Performance cannot be computed right now; retry later.', {}, err);
  }
}

async function computePerformance(em: EntityManager, model: Model, days: number) {
  const since = new Date(Date.now() - days * 86_400_000);
  const version = model.currentVersion ? await em.findOne(ModelVersionSchema, { model: model.id, number: model.currentVersion }) : null;
  const validation = (version?.validation ?? {}) as { metric?: string; score?: number; higher_is_better?: boolean; baseline_score?: number };
  const classes = ((version?.report as { classes?: string[] } | undefined)?.classes ?? []).map(String);
  const [counted] = await em
    .getConnection()
    .execute<Array<{ n: number }>>(`select coalesce(sum(row_count), 0)::float8 as n from prediction_calls where model_id = ? and created_at >= ?`, [model.id, since]);
  const metric = validation.metric ?? 'rmse';
  const { matched, score } = await observedScore(em, metric, model.id, since, classes);
  const expected = validation.score ?? null;
  let verdict: 'holding' | 'weak' | 'dropped' | null = null;
  if (score !== null && expected !== null) {
    const t = PERFORMANCE_THRESHOLDS;
    const baseline = validation.baseline_score;
    if (validation.higher_is_better) {
      const beatsLazy = baseline === undefined || score > baseline;
      verdict = score >= expected - t.holdingGap ? 'holding' : score >= expected - t.weakGap && beatsLazy ? 'weak' : 'dropped';
    } else {
      const beatsLazy = baseline === undefined || score < baseline;
      verdict = score <= expected * t.holdingRatio ? 'holding' : score <= expected * t.weakRatio && beatsLazy ? 'weak' : 'dropped';
    }
  }
  return {
    model_id: model.id,
    days,
    from: since.toISOString(),
    predictions: counted?.n ?? 0,
    expected: version ? { version: version.number, metric, score: expected, higher_is_better: validation.higher_is_better ?? false, baseline_score: validation.baseline_score ?? null } : null,
    observed: matched > 0 ? { matched, metric, score } : null,
    verdict,
    // snake_case like every other field of the API (the constant's own names leaked as holdingGap…)
    thresholds: {
      holding_gap: PERFORMANCE_THRESHOLDS.holdingGap,
      weak_gap: PERFORMANCE_THRESHOLDS.weakGap,
      holding_ratio: PERFORMANCE_THRESHOLDS.holdingRatio,
      weak_ratio: PERFORMANCE_THRESHOLDS.weakRatio,
    },
  };
}
