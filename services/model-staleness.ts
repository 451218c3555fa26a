import type { EntityManager } from '@mikro-orm/postgresql';
import { STALE_NO_OUTCOME_DAYS } from '../config/webhooks';
import { ModelSchema, type Model } from '../db/entities';
import { newId } from './ids';
import { modelPerformance } from './performance';
import { execIn, recordEvent } from './webhooks/events';

const DAY_MS = 86_400_000;

/** Serving models read at once by the daily check. */
const STALE_CHECK_PAGE = 500;

export type StaleReason = 'performance' | 'no_outcomes';

interface Judgement {
  reason: StaleReason | null;
  data: Record<string, unknown>;
}

/**
 * Whether a serving model is stale: its performance verdict over the last 30 days has left `holding`
 * (weak or dropped), or it has served for 30 days and keeps predicting with no outcome reported in
 * that time.
 */
async function judge(em: EntityManager, model: Model, now: Date): Promise<Judgement> {
  const performance = await modelPerformance(em, model, STALE_NO_OUTCOME_DAYS);
  const since = new Date(now.getTime() - STALE_NO_OUTCOME_DAYS * DAY_MS);
  const [last] = await execIn<{ at: Date | null }>(em, `select max(created_at) as at from outcomes where model_id = ?`, [model.id]);
  const lastOutcomeAt = last?.at ? new Date(last.at) : null;
  const data = {
    model: { id: model.id, name: model.name, version: model.currentVersion },
    verdict: performance.verdict,
    expected: performance.expected,
    observed: performance.observed,
    predictions: performance.predictions,
    last_outcome_at: lastOutcomeAt?.toISOString() ?? null,
    days: STALE_NO_OUTCOME_DAYS,
  };
  if (performance.verdict === 'weak' || performance.verdict === 'dropped') return { reason: 'performance', data };
  const silent = model.createdAt <= since && performance.predictions > 0 && (!lastOutcomeAt || lastOutcomeAt < since);
  return { reason: silent ? 'no_outcomes' : null, data };
}

/**
 * The daily check (the `mark-stale-models` Schedule): a model that goes stale opens an episode and
 * emits `model.stale`, in one transaction; while it stays stale nothing more is sent; once it
 * recovers the episode closes, so a later relapse is a new episode with its own event. Idempotent.
 * A model that cannot be judged is passed over (`onError`, counted in `failed`) and judged again the
 * next day: one model whose performance could not be read failed the whole check, every day, so no
 * model after it in id order, of any account, ever got its model.stale (a sixteenth probe).
 */
export async function markStaleModels(
  em: EntityManager,
  now: Date = new Date(),
  onError: (modelId: string, err: unknown) => void = () => undefined,
): Promise<{ opened: number; closed: number; failed: number }> {
  let opened = 0;
  let closed = 0;
  let failed = 0;
  // a page of serving models at a time, so that the check's memory does not grow with the service
  for await (const model of servingModels(em)) {
    try {
      const change = await markOne(em, model, now);
      if (change === 'opened') opened += 1;
      if (change === 'closed') closed += 1;
    } catch (err) {
      failed += 1;
      onError(model.id, err);
    }
  }
  return { opened, closed, failed };
}

/** Judges one model and opens or closes its episode (one transaction); answers what changed. */
async function markOne(em: EntityManager, model: Model, now: Date): Promise<'opened' | 'closed' | null> {
  const judgement = await judge(em.fork(), model, now);
  return em.fork().transactional(async (tx): Promise<'opened' | 'closed' | null> => {
    const [open] = await execIn<{ id: string }>(tx, `select id from model_stale_episodes where model_id = ? and ended_at is null for update`, [model.id]);
    if (judgement.reason && !open) {
      const episodeId = newId('event');
      const inserted = await execIn(
        tx,
        `insert into model_stale_episodes (id, model_id, reason, started_at) values (?, ?, ?, ?) on conflict do nothing returning id`,
        [episodeId, model.id, judgement.reason, now],
      );
      if (inserted.length === 0) return null;
      await recordEvent(
        tx,
        { workspaceId: model.workspace.id, type: 'model.stale', dedupeKey: `model.stale:${episodeId}`, data: { ...judgement.data, reason: judgement.reason } },
        now,
      );
      return 'opened';
    }
    if (!judgement.reason && open) {
      await execIn(tx, `update model_stale_episodes set ended_at = ? where id = ?`, [now, open.id]);
      return 'closed';
    }
    return null;
  });
}

/** Every serving model, STALE_CHECK_PAGE at a time, in the order of their ids (compared by PostgreSQL only, so its collation decides both the order and the next page). */
async function* servingModels(em: EntityManager): AsyncGenerator<Model> {
  let after: string | null = null;
  for (;;) {
    const page: Model[] = await em.fork().find(ModelSchema, after === null ? { status: 'serving' } : { status: 'serving', id: { $gt: after } }, { orderBy: { id: 'asc' }, limit: STALE_CHECK_PAGE });
    yield* page;
    if (page.length < STALE_CHECK_PAGE) return;
    after = page[page.length - 1]!.id;
  }
}
