import type { Client } from '@temporalio/client';
import { registry, routeLabel, watchEnginePool } from '../../../services/metrics';
import { TemporalGateway } from '../../../services/temporal/gateway';

async function value(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const sample = (metric?.values ?? []).find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return sample?.value ?? 0;
}

/** A client whose workflows start, then end with `outcome`. */
function fakeClient(outcome: () => Promise<unknown>): Client {
  const handle = { result: outcome };
  return { workflow: { start: async () => handle } } as unknown as Client;
}

describe('metrics', () => {
  it('labels routes by template, never by raw path', () => {
    expect(routeLabel('/v1/models/:id/predict')).toBe('/v1/models/{id}/predict');
    expect(routeLabel(undefined)).toBe('unmatched');
  });

  it('counts a workflow start, and a failure only when the started workflow fails', async () => {
    const starts = await value('workflow_starts_total', { workflow_type: 'trainModel' });
    const failures = await value('workflow_failures_total', { workflow_type: 'trainModel' });
    await new TemporalGateway(fakeClient(async () => ({ versionId: 'ver_1', number: 1 })), 'q').trainModel('mdl_1', 'acc_1');
    await expect(new TemporalGateway(fakeClient(async () => Promise.reject(new Error('boom'))), 'q').trainModel('mdl_2', 'acc_1')).rejects.toThrow('boom');
    expect(await value('workflow_starts_total', { workflow_type: 'trainModel' })).toBe(starts + 2);
    expect(await value('workflow_failures_total', { workflow_type: 'trainModel' })).toBe(failures + 1);
  });

  it('reads the engine pools at scrape time: queue and threads summed, utilisation averaged', async () => {
    const unwatchA = watchEnginePool(() => ({ queueSize: 3, utilization: 0.5, threads: 2 }));
    const unwatchB = watchEnginePool(() => ({ queueSize: 1, utilization: 0.25, threads: 1 }));
    expect(await value('engine_pool_queue_size')).toBe(4);
    expect(await value('engine_pool_threads')).toBe(3);
    expect(await value('engine_pool_utilization')).toBeCloseTo(0.375);
    unwatchA();
    unwatchB();
    expect(await value('engine_pool_queue_size')).toBe(0);
  });
});
