import { TRAINING_SEED } from '../../services/datasets';
import { ValidationBudget } from '../../services/free-budgets';
import { StagedValidation } from '../../services/staged-bodies';
import { validateDataset } from '../../services/validation';
import type { AppDeps } from '../app';
import { route, type AnyRoute } from '../route';
import { trainingInputSchema } from '../schemas/models';
import { z } from '../zod';
import { datasetRows, fileForThread, freeCallOf, requireAuth } from './helpers';

const validationReportSchema = z
  .object({
    valid: z.boolean(),
    target: z.string(),
    report: z.record(z.string(), z.unknown()).nullable().openapi({ description: 'The training report (columns, types, task, rows used); null when the data was refused.' }),
    errors: z.array(z.object({ code: z.string(), message: z.string() })),
    hint: z.string().openapi({ description: 'The first thing to fix.' }),
    trial: z
      .object({
        verdict: z
          .object({ level: z.enum(['usable', 'weak', 'no_signal']), message: z.string(), column: z.string().optional() })
          .optional()
          .openapi({ description: 'Absent when validation already failed.' }),
        metrics: z.record(z.string(), z.unknown()).optional().openapi({ description: 'Trial score against the lazy answer (majority class or mean), on a random split.' }),
      })
      .openapi({ description: 'A trial fit on a random (not time-ordered) split.' }),
  })
  .openapi('ValidationReport');

export function datasetRoutes(deps: AppDeps): AnyRoute[] {
  const validationBudget = new ValidationBudget(deps.callPool);
  return [
    route({
      method: 'post',
      path: '/v1/datasets/validate',
      summary: 'Free trial run: the training report, a trial fit against the lazy answer, a verdict and a hint; creates nothing',
      tag: 'Datasets',
      auth: 'key_or_session',
      operation: 'datasets.validate',
      bodyKind: 'dataset',
      stagedBody: 'validation',
      body: trainingInputSchema,
      responses: { 200: { description: 'The validation report.', schema: validationReportSchema } },
      errors: [
        [400, 'CSV_UNREADABLE'],
        [413, 'TOO_MANY_ROWS'],
        [413, 'DATASET_TOO_LARGE'],
        [413, 'FILE_TOO_LARGE'],
      ],
      async handler(ctx, { body, auth, upload, staged }) {
        const a = requireAuth(auth);
        if (staged instanceof StagedValidation) {
          ctx.body = await validationBudget.admit(a, staged.report);
          return;
        }
        ctx.body = await validationBudget.run(a, async () => {
          // a file large enough to be parsed on a thread is validated there, its rows never coming back
          const file = fileForThread(body.data, upload);
          const source = file ? { file } : { rows: await datasetRows(deps.enginePool, body.data, upload, 'data') };
          return validateDataset(deps.enginePool, source, { plan: a.plan, engine: body.engine, target: body.target, task: body.task, seed: TRAINING_SEED }, freeCallOf(ctx, a));
        });
      },
    }),
  ];
}
