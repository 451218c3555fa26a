import { loadModel, predictRows, serialiseModel, trainTabular, TABULAR_ENGINE, type Row } from '../../../engines/tabular/index';
import { canServe, ENGINE_CATALOGUE } from '../../../engines/catalogue';
import { categoryRuleFor, groupOptionsFor, prepare, trainPrepared, GROUP_OPTIONS_V13 } from '../../../engines/tabular/pipeline';
import { Prng } from '../../../engines/tabular/prng';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { expectDeterministicRoundTrip, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/**
 * Rows of 300 records (a unit of 20 and a shift of 15) whose outcome's log-odds are a strong main effect
 * (a category m of two values, drawn per row, and a numeric x) plus the record's own level, uniform in
 * ±3. Searched from the prior, the key stops at m, the strongest main effect (its record groups
 * cannot hold x's effect); centred on the model's output, it goes on to the record.
 */
function recordRows(n: number, seed: number): Row[] {
  const rng = new Prng(seed);
  const level = Array.from({ length: 300 }, () => (rng.nextFloat() - 0.5) * 6);
  return Array.from({ length: n }, () => {
    const r = rng.nextInt(300);
    const m = rng.nextFloat() < 0.5 ? 1 : 0;
    const x = rng.nextFloat();
    const p = 1 / (1 + Math.exp(-(3 * (m - 0.5) + 6 * (x - 0.5) + level[r])));
    return { unit: `u${r % 20}`, shift: `s${Math.floor(r / 20)}`, m: m ? 'a' : 'b', x, target: rng.nextFloat() < p ? 'yes' : 'no' };
  });
}

describe('engine 13: 12.0.0 whose group member searches its key centred on the model\'s output', () => {
  it('trains exactly 12.0.0\'s model, but for its version, where no group member can act (fewer than 1,000 rows)', () => {
    const cases = [['binary', 300], ['multiclass', 300], ['regression', 300], ['binary', 999], ['regression', 999]] as const;
    for (const [kind, n] of cases) {
      const rows = signalRows(n, 14, kind);
      const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 2, config: FAST };
      const v12 = trainTabular(rows, { ...options, engineVersion: '12.0.0' }).model;
      const v13 = trainTabular(rows, { ...options, engineVersion: '13.0.0' }).model;
      expect(serialiseModel(v13)).toBe(serialiseModel({ ...v12, engine: { ...v12.engine, version: '13.0.0' } }));
    }
  });

  it('is 12.0.0 with the group option centred at 4 rows, and 12.0.0 does not centre its search', () => {
    expect(GROUP_OPTIONS_V13).toEqual({ centred: 4 });
    expect(groupOptionsFor('13.0.0')).toEqual({ centred: 4 });
    expect(groupOptionsFor('13.0.0', { minGain: 0.05 })).toEqual({ centred: 4, minGain: 0.05 });
    for (const v of ['11.0.0', '12.0.0'] as const) {
      expect(groupOptionsFor(v)).toBeUndefined();
      expect(groupOptionsFor(v, { minGain: 0.05 })).toEqual({ minGain: 0.05 });
    }
    const p = prepare(recordRows(2000, 1), 'target', 'classification', categoryRuleFor('13.0.0'));
    const v13 = trainPrepared(p, { engineVersion: '13.0.0', seed: 1, config: FAST }).model;
    const v12c = trainPrepared(p, { engineVersion: '12.0.0', seed: 1, config: { ...FAST, group: { centred: 4 } } }).model;
    expect(serialiseModel(v13)).toBe(serialiseModel({ ...v12c, engine: { ...v12c.engine, version: '13.0.0' } }));
  });

  it('finds and keeps a record\'s key where 12.0.0\'s search stops at the main effect, and is better out of fold and on new rows', () => {
    const rows = recordRows(2000, 1);
    const test = recordRows(3000, 1).slice(2000);
    const p = prepare(rows, 'target', 'classification', categoryRuleFor('13.0.0'));
    const v12 = trainPrepared(p, { engineVersion: '12.0.0', seed: 1, config: FAST });
    const v13 = trainPrepared(p, { engineVersion: '13.0.0', seed: 1, config: FAST });
    const names = (cols?: number[]) => (cols ?? []).map((c) => p.analysis.features[c].name).sort();
    expect(names(v12.group?.columns)).toEqual(['m']);
    expect(v12.model.group).toBeUndefined();
    expect(names(v13.group?.columns)).toEqual(['m', 'shift', 'unit']);
    expect(v13.model.group?.weight).toBeGreaterThan(0);
    expect(v13.validation.score).toBeGreaterThan(v12.validation.score + 0.01);
    const logLoss = (model: typeof v12.model) => -predictRows(model, test).reduce((s, q, i) => s + Math.log(q.probabilities?.[String(test[i].target)] ?? 0), 0) / test.length;
    expect(logLoss(v13.model)).toBeLessThan(logLoss(v12.model));
    // a row of an unseen record keeps the model's output
    const unseen = [{ unit: 'u999', shift: 's1', m: 'a', x: 0.3 }];
    expect(predictRows(v13.model, unseen)).toEqual(predictRows({ ...v13.model, group: undefined }, unseen));
  });

  it('is deterministic for a seed and round-trips a group part through a format-4 artefact bit for bit', () => {
    const rows = recordRows(2000, 2);
    const options = { target: 'target', task: 'classification' as const, seed: 4, engineVersion: '13.0.0' as const, config: FAST };
    const a = trainTabular(rows, options).model;
    const text = serialiseModel(a);
    expect(serialiseModel(trainTabular(rows, options).model)).toBe(text);
    expect(a.group).toBeDefined();
    expect((JSON.parse(text) as { formatVersion: number }).formatVersion).toBe(4);
    const back = loadModel(text);
    expect(back.engine).toEqual({ id: 'tabular-gbdt', version: '13.0.0' });
    expect(serialiseModel(back)).toBe(text);
    const query = recordRows(2200, 2).slice(2000);
    expect(predictRows(back, query)).toEqual(predictRows(a, query));
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) is deterministic for a seed and round-trips through a format-4 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('13.0.0', kind, 4, FAST);
  });

  it('stays trainable by name in format 4 and servable after 14.0.0, 15.0.0, 16.0.0, 17.0.0, 18.0.0 and 19.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    expect(TABULAR_ENGINE.artefactFormatVersion).toBe(5);
    const model = trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, engineVersion: '13.0.0', config: FAST }).model;
    expect(model.engine.version).toBe('13.0.0');
    expect(model.formatVersion).toBe(4);
    expect(canServe('tabular-gbdt', '13.0.0')).toBe(true);
    expect(ENGINE_CATALOGUE.find((e) => e.id === 'tabular-gbdt')?.version).toBe('19.0.0');
  });
});
