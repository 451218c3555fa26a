/**
 * What a refresh's fold of pending outcomes costs the worker process (`foldPendingOutcomes`, the
 * `foldOutcomes` activity): wall time, the longest stall of the event loop (which also runs every
 * workflow of the worker) and the growth of the process's memory, for a model holding N pending
 * outcomes (a plan's training rows at most: 10,000 free, 200,000 pro, 1,000,000 growth).
 *
 *   npx tsx bench/api/fold.ts [--outcomes 100000,200000] [--features 3]
 *
 * A scratch database (on DATABASE_URL, else the machine's PostgreSQL, else an embedded one) holds one
 * model of a growth account; the outcomes are written by one INSERT … SELECT, then folded.
 */
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { ModelSchema } from '../../db/entities';
import { openOrm } from '../../db/orm';
import { createScratchDatabase } from '../../scripts/lib/scratch-database';
import { provisionAccount } from '../../services/accounts';
import { createModelForTraining, loadContext } from '../../services/models';
import { foldPendingOutcomes } from '../../services/training';

const repoRoot = path.resolve(__dirname, '..', '..');

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { outcomes: { type: 'string', default: '100000,200000' }, features: { type: 'string', default: '3' } } });
  const sizes = values.outcomes.split(',').map(Number);
  const featureCount = Number(values.features);
  const database = await createScratchDatabase('fold_bench', path.join(repoRoot, '.data', 'bench'), process.env.DATABASE_URL);
  const orm = await openOrm(database.url, 2);
  try {
    console.log('| pending outcomes | features | fold s | longest event-loop stall ms | RSS growth MB | context read and cloned s | its longest stall ms |');
    console.log('|---:|---:|---:|---:|---:|---:|---:|');
    for (const n of sizes) {
      const owner = await provisionAccount(orm.em.fork(), { email: `fold-${Date.now()}@example.test`, plan: 'growth' });
      const columns = Array.from({ length: featureCount }, (_, j) => `f${j}`);
      const rows = Array.from({ length: 100 }, (_, i) => ({ ...Object.fromEntries(columns.map((c, j) => [c, (i * (j + 3)) % 17])), y: i % 2 === 0 ? 'yes' : 'no' }));
      const model = await createModelForTraining(orm.em.fork(), {
        workspaceId: owner.workspace.id,
        accountId: owner.account.id,
        name: undefined,
        target: 'y',
        task: 'binary',
        engineId: 'tabular-gbdt',
        explain: false,
        autoUpdate: false,
        rows,
      });
      // as after its first fit: serving version 1 (no artefact is needed to fold)
      await orm.em.fork().nativeUpdate(ModelSchema, { id: model.id }, { status: 'serving', currentVersion: 1 });
      const features = columns.map((c, j) => `'${c}', (g * ${j + 3}) % 17`).join(', ');
      await orm.em
        .fork()
        .getConnection()
        .execute(
          `insert into outcomes (id, model_id, workspace_id, prediction_id, features, actual, status, created_at)
           select 'out_bench' || ?::text || '_' || g, ?, ?, null, jsonb_build_object(${features}), to_jsonb(case when g % 2 = 0 then 'yes' else 'no' end), 'pending', now()
           from generate_series(1, ?::int) g`,
          [model.id.slice(4), model.id, owner.workspace.id, n],
        );
      global.gc?.();
      const rssBefore = process.memoryUsage().rss;
      let rssPeak = rssBefore;
      const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20);
      const stalls = monitorEventLoopDelay({ resolution: 10 });
      stalls.enable();
      const started = process.hrtime.bigint();
      const folded = await foldPendingOutcomes(orm.em.fork(), model.id);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      stalls.disable();
      clearInterval(sampler);
      const count = folded && 'folded' in folded ? folded.folded : 0;
      if (count !== n) throw new Error(`folded ${count} of ${n}`);
      // what the fit then does on the worker's event loop before the engine thread starts: read the
      // context, and hand its rows to the thread (a structured clone)
      const loadStalls = monitorEventLoopDelay({ resolution: 10 });
      loadStalls.enable();
      const loadStarted = process.hrtime.bigint();
      const context = await loadContext(orm.em.fork(), model.id, 2, null);
      structuredClone(context);
      const loadSeconds = Number(process.hrtime.bigint() - loadStarted) / 1e9;
      loadStalls.disable();
      console.log(
        `| ${n.toLocaleString('en')} | ${featureCount} | ${seconds.toFixed(2)} | ${(stalls.max / 1e6).toFixed(0)} | ${((rssPeak - rssBefore) / 1e6).toFixed(0)} | ${loadSeconds.toFixed(2)} | ${(loadStalls.max / 1e6).toFixed(0)} |`,
      );
    }
  } finally {
    await orm.close();
    await database.drop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
