import { predictRows, serialiseModel, trainTabular, TABULAR_ENGINE, type Row } from '../../../engines/tabular/index';
import { canServe } from '../../../engines/catalogue';
import { categoryRuleFor, prepare, trainPrepared } from '../../../engines/tabular/pipeline';
import { Prng } from '../../../engines/tabular/prng';
import { analyse, CATEGORY_RULE_V1, CATEGORY_RULE_V10 } from '../../../engines/tabular/schema';
import type { EngineConfigOverride } from '../../../engines/tabular/train';
import { expectDeterministicRoundTrip, signalRows } from './helpers';

const FAST: EngineConfigOverride = { maxRounds: 40, folds: 3, models: 3 };

/** A text column `site` with `sizes[k]` rows of category `s<k>` (most frequent first), and a noise column. */
function siteRows(sizes: number[], target: (k: number, rng: Prng) => number, seed = 3): Row[] {
  const rng = new Prng(seed);
  const rows: Row[] = [];
  sizes.forEach((size, k) => {
    for (let i = 0; i < size; i++) rows.push({ site: `s${String(k).padStart(3, '0')}`, noise: rng.nextFloat(), target: target(k, rng) });
  });
  return rows;
}

const codesOf = (rows: Row[], rule = CATEGORY_RULE_V10) => analyse(rows, 'target', 'regression', rule).columns.find((c) => c.name === 'site');

describe('the category rule of engine 10', () => {
  it('keeps the 63 most frequent categories, then each further one of at least 20 rows; the rest share "other"', () => {
    const rows = siteRows([...Array<number>(70).fill(25), ...Array<number>(30).fill(5)], (k) => k);
    const v10 = codesOf(rows);
    expect(v10?.categories).toHaveLength(70);
    expect(v10?.categories).toContain('s069');
    expect(v10?.categories).not.toContain('s070');
    expect(v10?.otherCode).toBe(70);
    const v1 = codesOf(rows, CATEGORY_RULE_V1);
    expect(v1?.categories).toHaveLength(63);
    expect(v1?.otherCode).toBe(63);
  });

  it('keeps every category when all are frequent, and at most 254 with "other" beyond', () => {
    const all = codesOf(siteRows(Array<number>(120).fill(20), (k) => k));
    expect(all?.categories).toHaveLength(120);
    expect(all?.otherCode).toBe(-1);
    const capped = codesOf(siteRows(Array<number>(300).fill(20), (k) => k));
    expect(capped?.categories).toHaveLength(254);
    expect(capped?.otherCode).toBe(254);
  });

  it('is the earlier rule on columns of at most 64 categories', () => {
    const rows = siteRows(Array<number>(64).fill(3), (k) => k);
    expect(codesOf(rows)).toEqual(codesOf(rows, CATEGORY_RULE_V1));
    expect(codesOf(rows)?.categories).toHaveLength(64);
  });

  it('belongs to 10.0.0, 11.0.0, 12.0.0, 13.0.0, 14.0.0 and 15.0.0 only, and training refuses rows prepared by another version\'s rule', () => {
    expect(categoryRuleFor('10.0.0')).toBe(CATEGORY_RULE_V10);
    expect(categoryRuleFor('11.0.0')).toBe(CATEGORY_RULE_V10);
    expect(categoryRuleFor('12.0.0')).toBe(CATEGORY_RULE_V10);
    expect(categoryRuleFor('13.0.0')).toBe(CATEGORY_RULE_V10);
    expect(categoryRuleFor('14.0.0')).toBe(CATEGORY_RULE_V10);
    expect(categoryRuleFor('15.0.0')).toBe(CATEGORY_RULE_V10);
    for (const version of ['1.0.0', '7.0.0', '9.0.0'] as const) expect(categoryRuleFor(version)).toBe(CATEGORY_RULE_V1);
    const p = prepare(signalRows(120, 3, 'binary'), 'target', 'classification', categoryRuleFor('9.0.0'));
    expect(() => trainPrepared(p, { engineVersion: '10.0.0', config: FAST })).toThrow(/category rule/);
  });
});

describe('engine 10: 9.0.0 with frequent categories beyond the 63 most frequent', () => {
  it('trains exactly 9.0.0\'s model, but for its version, on data without a column of more than 64 categories', () => {
    for (const kind of ['binary', 'regression'] as const) {
      const rows = signalRows(300, 14, kind);
      const options = { target: 'target', task: kind === 'regression' ? ('regression' as const) : ('classification' as const), seed: 2, config: FAST };
      const v9 = trainTabular(rows, { ...options, engineVersion: '9.0.0' }).model;
      const v10 = trainTabular(rows, { ...options, engineVersion: '10.0.0' }).model;
      expect(serialiseModel(v10)).toBe(serialiseModel({ ...v9, engine: { ...v9.engine, version: '10.0.0' } }));
    }
  });

  it('tells apart two categories after the 63rd that 9.0.0 folds into "other"', () => {
    // 80 sites of 30 rows, each with its own level; s070 and s075 lie far apart
    const rows = siteRows(Array<number>(80).fill(30), (k, rng) => (k % 2 === 0 ? 10 : -10) + rng.nextFloat());
    const query = [{ site: 's070', noise: 0.5 }, { site: 's075', noise: 0.5 }];
    const options = { target: 'target', task: 'regression' as const, seed: 1, config: FAST };
    const v9 = predictRows(trainTabular(rows, { ...options, engineVersion: '9.0.0' }).model, query).map((p) => p.prediction as number);
    const v10 = predictRows(trainTabular(rows, { ...options, engineVersion: '10.0.0' }).model, query).map((p) => p.prediction as number);
    expect(v9[0]).toBe(v9[1]);
    expect(v10[0]).toBeGreaterThan(5);
    expect(v10[1]).toBeLessThan(-5);
  });

  it.each(['binary', 'multiclass', 'regression'] as const)('(%s) is deterministic for a seed and round-trips through a format-3 artefact bit for bit', (kind) => {
    expectDeterministicRoundTrip('10.0.0', kind, 3, FAST);
  });

  it('stays servable and trainable by name, in format 3, after 11.0.0, 12.0.0, 13.0.0, 14.0.0, 15.0.0, 16.0.0, 17.0.0, 18.0.0 and 19.0.0 became the default', () => {
    expect(TABULAR_ENGINE.version).toBe('19.0.0');
    const model = trainTabular(signalRows(120, 3, 'binary'), { target: 'target', seed: 0, config: FAST, engineVersion: '10.0.0' }).model;
    expect(model.engine.version).toBe('10.0.0');
    expect((JSON.parse(serialiseModel(model)) as { formatVersion: number }).formatVersion).toBe(3);
    expect(canServe('tabular-gbdt', '10.0.0')).toBe(true);
  });
});
