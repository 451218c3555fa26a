import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { TemporalGateway } from '../../services/temporal/gateway';
import type { DrainState } from '../drain';
import { loggerOf } from '../middleware/request-logger';
import { route, type AnyRoute } from '../route';
import { z } from '../zod';

const dependencySchema = z.object({
  status: z.enum(['up', 'down']),
  latency_ms: z.number(),
  error: z.string().optional().openapi({ description: 'When down: `no answer within 2000 ms` or `unreachable` (the cause is in the service log, under the request id).' }),
});
const healthSchema = z
  .object({
    status: z.enum(['ok', 'error']),
    message: z.string().optional(),
    messageDetail: z.string().optional(),
    dependencies: z.object({ postgres: dependencySchema, temporal: dependencySchema }),
  })
  .openapi('Health');

type Dependency = z.infer<typeof dependencySchema>;

const CHECK_TIMEOUT_MS = 2000;

/** Said of a dependency that failed for any other reason than the timeout. */
const UNREACHABLE = 'unreachable';

/**
 * A dependency's status and latency. The route is public: a failure is told as a fixed sentence, its
 * cause logged under the request id (a driver's message names hosts, ports, users and databases: an
 * eleventh probe read `connect ECONNREFUSED <address>` of the service's Temporal from any client).
 */
async function check(probe: () => Promise<unknown>, name: string, log: Logger): Promise<Dependency> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => {
          timedOut = true;
          reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`));
        }, CHECK_TIMEOUT_MS);
      }),
    ]);
    return { status: 'up', latency_ms: Math.round(performance.now() - started) };
  } catch (err) {
    log.warn({ err, dependency: name }, 'health check: a dependency does not answer');
    return { status: 'down', latency_ms: Math.round(performance.now() - started), error: timedOut ? `no answer within ${CHECK_TIMEOUT_MS} ms` : UNREACHABLE };
  } finally {
    clearTimeout(timer);
  }
}

export function healthRoutes(deps: { orm: MikroORM; temporal: TemporalGateway; logger: Logger; drain?: DrainState }): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/health',
      summary: 'Service health and its dependencies (PostgreSQL, Temporal)',
      tag: 'Service',
      auth: 'public',
      responses: {
        200: { description: 'Every dependency answers.', schema: healthSchema },
        503: { description: 'A dependency does not answer (the body names it), or the process is shutting down: error envelope plus dependencies.', schema: healthSchema },
      },
      errors: [
        [503, 'DEPENDENCY_UNAVAILABLE'],
        [503, 'SHUTTING_DOWN'],
      ],
      async handler(ctx) {
        const log = loggerOf(ctx, deps.logger);
        const [postgres, temporal] = await Promise.all([
          check(() => deps.orm.em.fork().getConnection().execute('select 1'), 'postgres', log),
          check(() => deps.temporal.ping(CHECK_TIMEOUT_MS), 'temporal', log),
        ]);
        const down = [postgres.status === 'down' ? 'PostgreSQL' : null, temporal.status === 'down' ? 'Temporal' : null].filter(
          (name): name is string => name !== null,
        );
        if (deps.drain?.active) {
          // A load balancer reading 503 stops sending new requests while in-flight ones finish.
          ctx.status = 503;
          ctx.body = { status: 'error', message: 'SHUTTING_DOWN', messageDetail: 'This instance is shutting down.', dependencies: { postgres, temporal } };
          return;
        }
        if (down.length === 0) {
          ctx.body = { status: 'ok', dependencies: { postgres, temporal } };
          return;
        }
        ctx.status = 503;
        ctx.body = {
          status: 'error',
          message: 'DEPENDENCY_UNAVAILABLE',
          messageDetail: `${down.join(' and ')} ${down.length > 1 ? 'do' : 'does'} not answer.`,
          dependencies: { postgres, temporal },
        };
      },
    }),
  ];
}
