import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What an engine pool reports at each scrape. */
export interface PoolStats {
  queueSize: number;
  /** Share of the pool's capacity spent running tasks since it started, 0..1 (piscina's `utilization`). */
  utilization: number;
  threads: number;
}

/**
 * The process's one metrics registry. A module singleton on purpose: a process has one /metrics, and
 * the counters are bumped from places (request log, Temporal gateway) that should not need a new
 * dependency threaded through every constructor to do so.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP request duration by method, route template (never the raw path) and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});

export const creditsCharged = new Counter({
  name: 'credits_charged_total',
  help: 'Credits charged to accounts, by operation (idempotent replays charge nothing and are not counted).',
  labelNames: ['operation'] as const,
  registers: [registry],
});

export const chargeBatchCalls = new Histogram({
  name: 'credit_charge_batch_calls',
  help: 'Answered paid calls charged by one statement (calls that arrive while a charge statement runs share the next one).',
  buckets: [1, 2, 4, 8, 16, 32, 64],
  registers: [registry],
});

export const rateBudgetStatements = new Counter({
  name: 'rate_budget_statements_total',
  help: 'API-key authentications by statement: "read" (the call spent a point of this process\'s budget leases) or "claim" (it claimed points from the shared counters).',
  labelNames: ['statement'] as const,
  registers: [registry],
});

export const stagedBodies = new Counter({
  name: 'staged_request_bodies_total',
  help: 'Request bodies of 1 MiB or more (predictions, new models) and prediction files of 256 KiB or more read on an engine thread instead of the event loop, by outcome ("staged": read there, "refused": answered 4xx).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const workflowStarts = new Counter({
  name: 'workflow_starts_total',
  help: 'Workflows started by this process, by workflow type (signal-with-start counts as one start request).',
  labelNames: ['workflow_type'] as const,
  registers: [registry],
});

export const workflowFailures = new Counter({
  name: 'workflow_failures_total',
  help: 'Workflows started and awaited by this process whose result was a failure, by workflow type.',
  labelNames: ['workflow_type'] as const,
  registers: [registry],
});

// Engine pools register themselves; gauges are read at scrape time, summed over the live pools.
const pools = new Set<() => PoolStats>();

export function watchEnginePool(stats: () => PoolStats): () => void {
  pools.add(stats);
  return () => pools.delete(stats);
}

function poolGauge(name: string, help: string, read: (s: PoolStats) => number, combine: (values: number[]) => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(combine([...pools].map((stats) => read(stats()))));
    },
  });
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
poolGauge('engine_pool_queue_size', 'Engine tasks waiting for a worker thread.', (s) => s.queueSize, sum);
poolGauge('engine_pool_threads', 'Worker threads running in the engine pool.', (s) => s.threads, sum);
poolGauge(
  'engine_pool_utilization',
  'Engine pool utilisation, 0..1: share of its capacity spent running tasks since it started.',
  (s) => s.utilization,
  (values) => (values.length === 0 ? 0 : sum(values) / values.length),
);

/** `/v1/models/:id` → `/v1/models/{id}`: the label uses the template, as the OpenAPI document does. */
export function routeLabel(template: string | undefined): string {
  return template ? template.replace(/:([A-Za-z_]+)/g, '{$1}') : 'unmatched';
}
