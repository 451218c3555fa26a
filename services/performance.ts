import type { EntityManager } from '@mikro-orm/postgresql';
import { ModelVersionSchema, type Model } from '../db/entities';

/**
 * Verdict thresholds, against the validation score the serving version earned at training time:
 * - higher-is-better metrics (ROC AUC, accuracy): holding while observed ≥ expected − 0.05, weak while
 *   ≥ expected − 0.15 and above the lazy answer's score, dropped below;
 * - lower-is-better metrics (RMSE, log loss): holding while observed ≤ 1.2 × expected, weak while
 *   ≤ 1.5 × expected and below the lazy answer's score, dropped beyond.
 */
export const PERFORMANCE_THRESHOLDS = { holdingGap: 0.05, weakGap: 0.15, holdingRatio: 1.2, weakRatio: 1.5 } as const;

interface Matched {
  output: Record<string, unknown>;
  actual: unknown;
}

function rocAuc(scores: number[], labels: boolean[]): number | null {
  const positives = labels.filter(Boolean).length;
  const negatives = labels.length - positives;
  if (positives === 0 || negatives === 0) return null;
  const order = scores.map((s, i) => [s, i] as const).sort((a, b) => a[0] - b[0]);
  let rankSum = 0;
  let i = 0;
  while (i < order.length) {
    let j = i;
    while (j + 1 < order.length && order[j + 1]![0] === order[i]![0]) j += 1;
    const averageRank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k += 1) if (labels[order[k]![1]]) rankSum += averageRank;
    i = j + 1;
  }
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

function observedScore(metric: string, matched: Matched[], classes: string[]): number | null {
  if (matched.length === 0) return null;
  if (metric === 'rmse') {
    const errors = matched.map((m) => Number(m.output.prediction) - Number(m.actual));
    return Math.sqrt(errors.reduce((s, e) => s + e * e, 0) / errors.length);
  }
  if (metric === 'roc_auc') {
    const positive = classes[classes.length - 1] ?? '';
    return rocAuc(
      matched.map((m) => Number(m.output[`proba_${positive}`] ?? 0)),
      matched.map((m) => String(m.actual) === positive),
    );
  }
  // log loss (multiclass)
  const eps = 1e-15;
  const losses = matched.map((m) => -Math.log(Math.max(eps, Number(m.output[`proba_${String(m.actual)}`] ?? 0))));
  return losses.reduce((s, l) => s + l, 0) / losses.length;
}

export async function modelPerformance(em: EntityManager, model: Model, days: number) {
  const since = new Date(Date.now() - days * 86_400_000);
  const version = model.currentVersion ? await em.findOne(ModelVersionSchema, { model: model.id, number: model.currentVersion }) : null;
  const validation = (version?.validation ?? {}) as { metric?: string; score?: number; higher_is_better?: boolean; baseline_score?: number };
  const classes = ((version?.report as { classes?: string[] } | undefined)?.classes ?? []).map(String);
  const knex = em.getKnex();
  const [{ count: predictionCount }] = (await knex('predictions').where('model_id', model.id).andWhere('created_at', '>=', since).count({ count: '*' })) as Array<{ count: string }>;
  const matched = (await knex('predictions as p')
    .join('outcomes as o', 'o.prediction_id', 'p.id')
    .where('p.model_id', model.id)
    .andWhere('p.created_at', '>=', since)
    .select('p.output', 'o.actual')) as Matched[];

  const metric = validation.metric ?? 'rmse';
  const score = observedScore(metric, matched, classes);
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
    predictions: Number(predictionCount),
    expected: version ? { version: version.number, metric, score: expected, higher_is_better: validation.higher_is_better ?? false, baseline_score: validation.baseline_score ?? null } : null,
    observed: matched.length > 0 ? { matched: matched.length, metric, score } : null,
    verdict,
    thresholds: PERFORMANCE_THRESHOLDS,
  };
}
