/**
 * From rows to a trained model: analysis, encoding, core training, validation score, explanations.
 */
import { gainImportance, permutationImportance, toShares, type Factor } from './explain';
import type { TabularModel } from './model';
import { analyse, encodeRows, CATEGORY_RULE_V1, CATEGORY_RULE_V10, type Analysis, type CategoryRule, type DataReport, type Row, type TaskOption } from './schema';
import { blendWeights, fitPortfolio, memberConfig, membersFor, MEMBERS_V3, type MemberName } from './portfolio';
import { basisMatrix, fitBasis, fitLinear, stackWeights, DEFAULT_LINEAR_OPTIONS, type LinearOptions, type LinearPart } from './linear';
import { defaultConfig, fitCore, rawToOutput, takeRows, type FoldOffsets, type CoreResult, type EngineConfig, type EngineConfigOverride, type InternalTask } from './train';
import { logLoss, rmse, rocAuc } from './metrics';
import { fitForest, forestOutputs, outOfBagOutputs, mixOutputs, mixWeight, predictForest, forestOptions, type ForestOptions, type ForestPart, type ForestVersion } from './forest';
import { bootstrapGain, fitKnnOof, knnPart, DEFAULT_KNN_OPTIONS, type KnnOptions, type KnnPart } from './knn';
import { fitGroupTable, groupOofs, groupOutputs, outputLoss, searchGroupKey, DEFAULT_GROUP_OPTIONS, SMOOTH_GRID, type GroupOptions, type GroupPart } from './group';

export const ENGINE_ID = 'tabular-gbdt';
/**
 * Engine versions. 1.0.0: one cross-fit ensemble of leaf-wise trees. 2.0.0: a portfolio of members
 * (portfolio.ts) blended with weights fitted on their out-of-fold scores. 3.0.0: a portfolio of two
 * members, engine 1's leaf-wise ensemble and an ensemble of symmetric (oblivious) trees (portfolio.ts,
 * MEMBERS_V3), with the same blend. 4.0.0: one cross-fit ensemble as 1.0.0 whose every third round
 * grows a symmetric tree of depth 5 instead of a leaf-wise one (resolveConfigV4). 5.0.0: 4.0.0 with, on
 * small data only, half the learning rate and a longer early-stopping patience (resolveConfigV5).
 * 6.0.0: 5.0.0's trees plus a regularised linear member (linear.ts: ridge or L2 logistic/multinomial
 * regression on standardised numerics with hinge terms, missing indicators and category indicators)
 * fitted on the same folds and blended by out-of-fold weights, on data of at most 4,000 rows
 * (addLinearMember). 7.0.0: 6.0.0 whose small-data trees stop after a patience of 40 rounds instead of
 * 100 (resolveConfigV7), the member making up for the shorter patience. 8.0.0: 7.0.0 plus a forest
 * member (forest.ts: extremely randomised trees) mixed into the outputs by an out-of-fold weight, on
 * data of at most 500 rows (addForestMember). 9.0.0: 8.0.0 whose classification forests are weighed
 * by fold forests as large as the kept one, binary ones by out-of-fold ROC AUC (forestOptions).
 * 10.0.0: 9.0.0 on text columns that keep more categories: after the 63 most frequent, every category
 * of at least 20 rows, up to 254 (schema.ts, CATEGORY_RULE_V10); data without such a column train
 * exactly 9.0.0's model. 11.0.0: 10.0.0 plus a group member on data of at least 1,000 rows (group.ts:
 * a combination of columns naming the record a row belongs to; a row of a seen record moves towards
 * its record's training outcomes, one of an unseen record keeps the model's output; kept when it lowers
 * the out-of-fold loss by at least 2.5 %, addGroupMember); where it is not kept, 10.0.0's model.
 * 12.0.0: 11.0.0 whose regressions on small data stop their cross-fit's fold models together, on the
 * loss of all held-out rows (train.ts, EngineConfig.stopping 'pooled'; resolveConfigV12); other data
 * train exactly 11.0.0's model. 13.0.0: 12.0.0 whose group member searches its key with each row's
 * statistic smoothed towards the model's own out-of-fold output worth 4 rows instead of towards the
 * prior (group.ts, GroupOptions.centred; GROUP_OPTIONS_V13), so that the search goes on to the columns
 * that name records; the member is otherwise 12.0.0's (the same gates, the same part), and data of
 * fewer than 1,000 rows train exactly 12.0.0's model. 14.0.0: 13.0.0 whose classification trees above
 * small data (isSmallData) shrink their leaves by an L2 of 1/4 instead of 1 (resolveConfigV14): the
 * largest hessian of a log-loss row is 1/4, so an L2 of 1 weighed as at least four rows there (one
 * under squared error); regressions and small data train exactly 13.0.0's model. 15.0.0: 14.0.0 whose
 * forest member is also fitted on binary data above small data within a compute budget (rows ×
 * candidate features per node at most V15_BINARY_FOREST_MAX_WORK; forestOverrideFor); other data train
 * exactly 14.0.0's model. 16.0.0: 15.0.0 whose forest member also reaches binary data above small data
 * beyond that budget (up to V16_FOREST_MAX_ROWS rows), as one forest of 60 trees each grown on a random
 * subsample of floor(V15_BINARY_FOREST_MAX_WORK / round(√F)) rows, at most half the rows (ForestOptions
 * treeWork), its weight fitted on its out-of-bag outputs instead of fold forests (outOfBag;
 * forestOverrideFor); other data train exactly 15.0.0's model. 17.0.0: 16.0.0 plus a k-nearest-neighbours
 * member on binary small data (knn.ts, addKnnMember: at most 2,000 rows stored in the model, standardised;
 * k from {5, 10, 20, 40} by leave-one-out ROC AUC on the rows it may use), mixed into the outputs after
 * the forest by a weight fitted on its out-of-fold outputs (mixWeight by ROC AUC) and kept only when the
 * mixture raises the out-of-fold ROC AUC by at least V17_KNN_MIN_GAIN; where it is not kept, 16.0.0's
 * model (in artefact format 5). 18.0.0: 17.0.0 whose regressions above small data boost at a learning rate of
 * V18_REGRESSION_LEARNING_RATE instead of 0.1 (resolveConfigV18), about 0.8× their trees' rounds; other
 * data train exactly 17.0.0's model (artefact format 5). 19.0.0: 18.0.0 whose classification trees above small
 * data grow their symmetric rounds with an L2 of V19_CLASSIFICATION_SYMMETRIC_L2 (3/4) instead of 3
 * (resolveConfigV19), 14.0.0's scaling of the leaf-wise trees' L2 carried to them; other data train exactly
 * 18.0.0's model (artefact format 5).
 * 1.0.0-5.0.0 write artefact format 1, 6.0.0 and 7.0.0 format 2 (format 1 plus an optional linear
 * part), 8.0.0-10.0.0 format 3 (format 2 plus an optional forest part), 11.0.0-16.0.0
 * format 4 (format 3 plus an optional group part), 17.0.0-19.0.0 format 5 (format 4 plus an optional kNN part); all are scored by the same code, so a model of any version
 * keeps serving exactly what it served.
 */
export const ENGINE_VERSIONS = ['1.0.0', '2.0.0', '3.0.0', '4.0.0', '5.0.0', '6.0.0', '7.0.0', '8.0.0', '9.0.0', '10.0.0', '11.0.0', '12.0.0', '13.0.0', '14.0.0', '15.0.0', '16.0.0', '17.0.0', '18.0.0', '19.0.0'] as const;
export type EngineVersion = (typeof ENGINE_VERSIONS)[number];

/**
 * Whether `version` is `first` or a later version of the main line (4.0.0 onwards; every rule
 * introduced by a version is kept by the versions after it). 2.0.0 and 3.0.0, candidates never made
 * the default, come before 4.0.0.
 */
export function since(version: EngineVersion, first: EngineVersion): boolean {
  return ENGINE_VERSIONS.indexOf(version) >= ENGINE_VERSIONS.indexOf(first);
}
/**
 * The version new models are trained with: 19.0.0 (18.0.0 whose classification trees above small data grow
 * their symmetric rounds with an L2 of 3/4 instead of 3; bench/RESULTS.md, twenty-fifth round of issue 15:
 * development binary mean AUC against CatBoost +0.0051 on the benchmark's split, multiclass log loss lower on
 * 19 of 27 set-splits, the held-out binary sets not worse over five splits, 0.92-0.98× the fit CPU of the
 * sets it changes). Before it, 18.0.0 (17.0.0 whose regressions above small data boost at a
 * learning rate of 0.15; bench/RESULTS.md, twenty-third round of issue 15: the same wins and binary scores on
 * both collections, development nyc_taxi_fare a win over CatBoost, 0.92× the held-out collection's fit CPU).
 * Before it, 17.0.0 (16.0.0 with a kNN member on small binary data, kept
 * when it raises the out-of-fold ROC AUC by at least 0.008; bench/RESULTS.md, nineteenth round of issue
 * 15: development sonar, held-out birthwt change). Before it, 16.0.0 (15.0.0 with a subsampled forest weighed out of bag on
 * binary data above 15.0.0's forest budget; bench/RESULTS.md, seventeenth round of issue 15: development
 * adult, bank_marketing and spambase change, held-out caravan, resume_names, default and covid_testing).
 * Before it, 15.0.0 (14.0.0 with the forest member on binary data above
 * small data, within a compute budget). On the development collection it changes phoneme only, better
 * on three fold splits (0.9502 → 0.9660 on the benchmark's, a loss to CatBoost become a win; mean binary
 * AUC +0.0013) for 2.3 % more fit CPU; on the held-out collection it changes police_injury, kershaw
 * and wells, better on 5 and worse on 3 of 9 set-splits (+0.0165 AUC summed), police_injury by +0.005
 * on every split, for 13.7 % more fit CPU (bench/RESULTS.md, sixteenth round: engine 15.0.0). Every other set trains 14.0.0's model. 6.0.0 was
 * never the default: on the host of its measurement it took 5.05-5.07× LightGBM's fit time. Before
 * 19.0.0: 18.0.0, 17.0.0, 16.0.0, 15.0.0, 14.0.0, 13.0.0, 12.0.0, 11.0.0, 10.0.0, 9.0.0, 8.0.0, 7.0.0, 5.0.0, 4.0.0, 1.0.0. Models of
 * every earlier version keep the version they were trained with and its predictions.
 */
export const ENGINE_VERSION: EngineVersion = '19.0.0';

export interface Prepared {
  analysis: Analysis;
  X: Float64Array;
  n: number;
  F: number;
  categorical: Int32Array;
  y: Float64Array;
  task: InternalTask;
  nClasses: number;
  /** which categories of text columns got codes (the engine version's, see categoryRuleFor) */
  categoryRule: CategoryRule;
}

/** The category rule of an engine version (schema.ts): 10.0.0 to 15.0.0 keep frequent categories beyond the 63 most frequent. */
export function categoryRuleFor(version: EngineVersion, override?: Partial<CategoryRule>): CategoryRule {
  const rule = since(version, '10.0.0') ? CATEGORY_RULE_V10 : CATEGORY_RULE_V1;
  return override ? { ...rule, ...override } : rule;
}

/** Rows encoded for training by an engine version (default: the current one). */
export function prepare(rows: Row[], target: string, task?: TaskOption, categoryRule: CategoryRule = categoryRuleFor(ENGINE_VERSION)): Prepared {
  const analysis = analyse(rows, target, task, categoryRule);
  const F = analysis.features.length;
  const n = analysis.target.keep.length;
  const X = encodeRows(rows, analysis.columns, F, analysis.target.keep);
  const categorical = Int32Array.from(analysis.features, (f) => (f.kind === 'categorical' ? Math.max(1, f.numCategories) : 0));
  return {
    analysis,
    X,
    n,
    F,
    categorical,
    y: analysis.target.y,
    task: analysis.target.task,
    nClasses: analysis.target.classes ? analysis.target.classes.length : 0,
    categoryRule,
  };
}

export interface ValidationScore {
  metric: 'roc_auc' | 'log_loss' | 'rmse';
  score: number;
  higher_is_better: boolean;
  baseline_score: number;
}

/** Metric of probabilities/values `out` against y, and the lazy answer's score. */
export function scoreOutputs(task: InternalTask, y: Float64Array, out: Float64Array, nClasses: number, lazyFrom?: Float64Array): ValidationScore {
  const ref = lazyFrom ?? y;
  if (task === 'binary') {
    const p1 = Float64Array.from({ length: y.length }, (_, i) => out[i * 2 + 1]);
    return { metric: 'roc_auc', score: rocAuc(y, p1), higher_is_better: true, baseline_score: 0.5 };
  }
  if (task === 'multiclass') {
    const prior = new Float64Array(nClasses);
    for (let i = 0; i < ref.length; i++) prior[ref[i]] += 1 / ref.length;
    const lazy = new Float64Array(y.length * nClasses);
    for (let i = 0; i < y.length; i++) lazy.set(prior, i * nClasses);
    return { metric: 'log_loss', score: logLoss(y, out, nClasses), higher_is_better: false, baseline_score: logLoss(y, lazy, nClasses) };
  }
  let mean = 0;
  for (let i = 0; i < ref.length; i++) mean += ref[i] / ref.length;
  return { metric: 'rmse', score: rmse(y, out), higher_is_better: false, baseline_score: rmse(y, new Float64Array(y.length).fill(mean)) };
}

export interface TrainResult {
  model: TabularModel;
  report: DataReport;
  validation: ValidationScore;
  topFactors?: Factor[];
  core: CoreResult;
  /** engine 11: the group member's key (feature indices) and gain, when a key was searched */
  group?: { columns: number[]; gain?: number };
  /** the kNN member's weight and per-fold k, when fitted */
  knn?: { weight?: number; gain?: number; foldKs?: number[]; k?: number; foldPowers?: number[]; noGain?: number; gainSd?: number; cvGain?: number };
}

export interface TrainSettings {
  /** the engine version to train (default: the current one); older ones stay trainable for comparison */
  engineVersion?: EngineVersion;
  explain?: boolean;
  seed?: number;
  config?: EngineConfigOverride;
  onProgress?: (p: { done: number; total: number }) => void;
}

export function resolveConfig(p: Prepared, override?: EngineConfigOverride): EngineConfig {
  return withOverride(defaultConfig(p.n, p.task, p.nClasses), override);
}

/** A configuration with an override (experiments) applied on top, the grower's settings merged. */
function withOverride(cfg: EngineConfig, override: EngineConfigOverride | undefined): EngineConfig {
  if (!override) return cfg;
  return { ...cfg, ...configPart(override), grower: { ...cfg.grower, ...(override.grower ?? {}) } };
}

/** The override without the member list (which is not a setting of a member). */
function configPart(override: EngineConfigOverride): Partial<Omit<EngineConfig, 'grower'>> {
  const rest: EngineConfigOverride = { ...override };
  delete rest.members;
  delete rest.blendStart;
  delete rest.linear;
  delete rest.forest;
  delete rest.categories;
  delete rest.group;
  delete rest.knn;
  delete rest.grower;
  return rest;
}

/** Engine 2's members and their configurations; an override applies to every member (after its own changes). */
export function resolveMembers(p: Prepared, override?: EngineConfigOverride, version: EngineVersion = '2.0.0'): Array<{ name: MemberName; cfg: EngineConfig }> {
  const outputs = p.task === 'multiclass' ? p.nClasses : 1;
  const names = override?.members ?? (version === '2.0.0' ? membersFor(p.n, p.F, outputs) : MEMBERS_V3);
  const base = defaultConfig(p.n, p.task, p.nClasses);
  return names.map((name) => {
    return { name, cfg: withOverride(memberConfig(name, base, p.n, outputs), override) };
  });
}

/**
 * Engine 4: engine 1's configuration (cross-fit ensemble of leaf-wise trees, same folds, learning
 * rate, early stopping and sampling), where every third boosting round grows symmetric (oblivious)
 * trees of depth 5 (32 leaves, as many as engine 1's 31) with CatBoost's L2 of 3 instead of
 * leaf-wise ones (GrowerParams.symmetricEvery): both tree shapes in one model, at about 1.2x engine
 * 1's cost, where engine 3 trained and blended two separate ensembles at about 6x (bench/RESULTS.md).
 * An override applies on top (experiments).
 */
export function resolveConfigV4(p: Prepared, override?: EngineConfigOverride): EngineConfig {
  const base = defaultConfig(p.n, p.task, p.nClasses);
  const v4: EngineConfig = { ...base, grower: { ...base.grower, symmetricEvery: 3, symmetricHybridDepth: 5, symmetricHybridL2: 3 } };
  return withOverride(v4, override);
}

/** Engine 5: data up to this many row-outputs (rows, × classes for multiclass) count as small. */
export const V5_SMALL_WORK = 2000;

/** Small data for engines 5 and 7: at most V5_SMALL_WORK row-outputs. */
export function isSmallData(p: Prepared): boolean {
  return (p.task === 'multiclass' ? p.n * p.nClasses : p.n) <= V5_SMALL_WORK;
}

/**
 * Engine 5: 4.0.0's configuration, except on small data (at most V5_SMALL_WORK row-outputs), where
 * the learning rate is halved (0.05 instead of 0.1), the round cap doubled (2,000) and the early-stopping
 * patience raised to 100 rounds (5× 4.0.0's 20 at half the rate): each fold model of the cross-fit is
 * early-stopped on a fifth of a few hundred rows, whose loss is noisy, so a short patience stops it at
 * a chance minimum. Small data cost little, so the extra rounds barely change the summed fit time.
 * Larger data get 4.0.0's configuration exactly (same models). An override applies on top.
 */
export function resolveConfigV5(p: Prepared, override?: EngineConfigOverride): EngineConfig {
  const v4 = resolveConfigV4(p);
  const v5: EngineConfig = isSmallData(p) ? { ...v4, learningRate: 0.05, maxRounds: 2000, earlyStoppingRounds: 100 } : v4;
  return withOverride(v5, override);
}

/** Engine 7: the early-stopping patience of small data's trees (5.0.0: 100 rounds). */
export const V7_SMALL_PATIENCE = 40;

/**
 * Engine 7: 5.0.0's configuration with a patience of V7_SMALL_PATIENCE rounds on small data. With the
 * linear member blended in, the trees' longer patience bought little (bench/RESULTS.md, engine 7.0.0)
 * and cost a third of small data's training; the saving pays for the member. Larger data: 5.0.0's
 * configuration, which is 4.0.0's. An override applies on top.
 */
export function resolveConfigV7(p: Prepared, override?: EngineConfigOverride): EngineConfig {
  const v5 = resolveConfigV5(p);
  const v7: EngineConfig = isSmallData(p) ? { ...v5, earlyStoppingRounds: V7_SMALL_PATIENCE } : v5;
  return withOverride(v7, override);
}

/**
 * Engine 12: 7.0.0's configuration (that of engines 7-11), with the fold models of a regression on small
 * data (isSmallData) grown in step and stopped together on the loss of all held-out rows
 * (EngineConfig.stopping 'pooled'). One fold's held-out loss, on a fifth of at most 2,000 rows, is
 * noisy: it stopped a regression's model at a chance minimum where the pooled loss of the five folds goes
 * on falling (bench/RESULTS.md, engine 12.0.0: better on 15 of the 17 small regressions of the two
 * collections, worse on one by 0.02 %, for at most 0.5 s of the development collection's 133 s). Larger
 * regressions gain too (better on 10 of 13, worse on 3 by at most 0.07 %) but take 25 % more time there,
 * 3.5 % of the development collection's summed fit time, which the fit-time goal against LightGBM has no
 * room for; classification got worse (better on 15, worse on 20 of 44 sets). Those keep each fold's
 * own stopping, so they train 11.0.0's models. An override applies on top.
 */
export function resolveConfigV12(p: Prepared, override?: EngineConfigOverride): EngineConfig {
  const v7 = resolveConfigV7(p);
  const v12: EngineConfig = p.task === 'regression' && isSmallData(p) ? { ...v7, stopping: 'pooled' } : v7;
  return withOverride(v12, override);
}

/**
 * Engine 13: the group member's key search centred on the model's own out-of-fold output worth 4 rows
 * (GroupOptions.centred). Searched from the prior, the key's first columns are those of the strongest
 * main effects, and once its groups are small every further column only re-learns what the trees
 * already hold, so the search stops before the key names a record; smoothed towards the model's output,
 * a column gains only what the model does not hold (bench/RESULTS.md, engine 13.0.0: resume_names' job
 * advert, covid_testing's patients).
 */
export const GROUP_OPTIONS_V13: Partial<GroupOptions> = { centred: 4 };

/**
 * Engine 14: the leaf L2 of classification trees above small data. A leaf's value is -G / (H + L2), so
 * the L2 counts as rows' worth of hessian: one row under squared error (hessian 1), at least four under
 * log loss and softmax (a row's hessian p (1 - p) is at most 1/4), and many more in the confident
 * regions where p (1 - p) is small, which slowed and biased every classification fit above small data.
 * 1/4 is one row at its largest hessian. On small data the stronger shrinkage pays (bench/RESULTS.md,
 * engine 14.0.0), so it keeps 1.
 */
export const V14_CLASSIFICATION_L2 = 0.25;

/**
 * Engine 14: 12.0.0's configuration (that of 12.0.0 and 13.0.0) with the leaf-wise trees' L2 at
 * V14_CLASSIFICATION_L2 for classification above small data (isSmallData). Regressions and small data:
 * 12.0.0's configuration exactly (the symmetric rounds keep their L2 of 3). An override applies on top.
 */
export function resolveConfigV14(p: Prepared, override?: EngineConfigOverride): EngineConfig {
  const v12 = resolveConfigV12(p);
  const v14: EngineConfig = p.task !== 'regression' && !isSmallData(p) ? { ...v12, grower: { ...v12.grower, lambdaL2: V14_CLASSIFICATION_L2 } } : v12;
  return withOverride(v14, override);
}

/**
 * Engine 18: the learning rate of regressions above small data (isSmallData: more than 2,000 rows).
 * At 17.0.0's 0.1 their fold models ran 300-430 rounds each on the held-out collection's largest sets
 * (hotel_rates, gapminder, computers: a quarter of its fit time), where LightGBM's defaults stop at 100;
 * at 0.15 they take about 0.8× the trees' CPU with the same accuracy over three fold splits
 * (bench/RESULTS.md, twenty-third round of issue 15: development +0.015 % RMSE ± 0.106, held-out
 * −0.22 % ± 0.095). The patience stays 20 rounds.
 */
export const V18_REGRESSION_LEARNING_RATE = 0.15;

/**
 * Engine 18: 14.0.0's configuration (that of 14.0.0-17.0.0) with the learning rate at
 * V18_REGRESSION_LEARNING_RATE for regressions above small data. Classification and small data:
 * 14.0.0's configuration exactly. An override applies on top.
 */
export function resolveConfigV18(p: Prepared, override?: EngineConfigOverride): EngineConfig {
  const v14 = resolveConfigV14(p);
  const v18: EngineConfig = p.task === 'regression' && !isSmallData(p) ? { ...v14, learningRate: V18_REGRESSION_LEARNING_RATE } : v14;
  return withOverride(v18, override);
}

/**
 * Engine 19: the L2 of the symmetric rounds (GrowerParams.symmetricHybridL2) of classification trees above
 * small data. 4.0.0 took CatBoost's L2 of 3 for them, as 14.0.0's leaf-wise trees took 1 before it; the
 * argument of V14_CLASSIFICATION_L2 holds for them too: a leaf's value is -G / (H + L2), a log-loss row's
 * hessian is at most 1/4, so an L2 of 3 weighs as at least twelve rows there (three under squared error,
 * where CatBoost's value was set). 14.0.0 scaled the leaf-wise trees' L2 by 1/4 and left the symmetric
 * rounds at 3; 19.0.0 scales them the same way, to 3/4 (bench/RESULTS.md, twenty-fifth round of issue 15).
 */
export const V19_CLASSIFICATION_SYMMETRIC_L2 = 0.75;

/**
 * Engine 19: 18.0.0's configuration with the symmetric rounds' L2 at V19_CLASSIFICATION_SYMMETRIC_L2 for
 * classification above small data (isSmallData), the data where 14.0.0 set the leaf-wise trees' L2 to
 * V14_CLASSIFICATION_L2. Regressions and small data: 18.0.0's configuration exactly. An override applies on top.
 */
export function resolveConfigV19(p: Prepared, override?: EngineConfigOverride): EngineConfig {
  const v18 = resolveConfigV18(p);
  const v19: EngineConfig = p.task !== 'regression' && !isSmallData(p) ? { ...v18, grower: { ...v18.grower, symmetricHybridL2: V19_CLASSIFICATION_SYMMETRIC_L2 } } : v18;
  return withOverride(v19, override);
}

/** The group member's options of an engine version (11.0.0-19.0.0) with an override (experiments) on top. */
export function groupOptionsFor(version: EngineVersion, override?: Partial<GroupOptions>): Partial<GroupOptions> | undefined {
  if (!since(version, '13.0.0')) return override;
  return { ...GROUP_OPTIONS_V13, ...(override ?? {}) };
}

/**
 * Engine 15: the forest member's compute budget above small data, in rows × candidate features per node
 * (round(√F) on classification, forest.ts): the work of one level of one of its trees.
 */
export const V15_BINARY_FOREST_MAX_WORK = 12000;

/**
 * Engine 16: the most rows on which binary data above V15_BINARY_FOREST_MAX_WORK get the subsampled,
 * out-of-bag forest member (forestOverrideFor): its trees' work is bounded, but the member still reads
 * every row (a column copy, out-of-bag scores), and no collection holds binary data this large.
 */
export const V16_FOREST_MAX_ROWS = 100000;

/**
 * The forest member's options of an engine version for the prepared data, with an override
 * (experiments) on top. Engine 15: binary data above small data (isSmallData: more than 2,000 rows)
 * get 9.0.0's forest member too (60 trees grown to purity, fold forests as large, the weight of
 * greatest out-of-fold ROC AUC), within V15_BINARY_FOREST_MAX_WORK (about a second of CPU a fit on
 * the development host). Above small data the weight is chosen on more than 2,000 held-out rows,
 * where ROC AUC is a steady measure; between 500 and 2,000 rows the forest lost on most sets
 * (bench/RESULTS.md, engine 9.0.0 and the sixteenth round). Other data and other versions: the version's
 * forest (engines 8-14: data of at most 500 rows). Engine 16: binary data above small data beyond
 * that budget (up to V16_FOREST_MAX_ROWS rows) get one forest of 60 trees, each grown on a random
 * subsample of floor(V15_BINARY_FOREST_MAX_WORK / round(√F)) rows (at most half the rows; treeWork), its
 * weight fitted on its out-of-bag outputs (outOfBag): no fold forests, so about a sixth of a full
 * member's trees at the budget's work each (bench/RESULTS.md, seventeenth round of issue 15).
 */
export function forestOverrideFor(version: EngineVersion, p: Prepared, override?: Partial<ForestOptions>): Partial<ForestOptions> | undefined {
  if (!since(version, '15.0.0') || p.task !== 'binary' || isSmallData(p)) return override;
  if (p.n * Math.max(1, Math.round(Math.sqrt(p.F))) > V15_BINARY_FOREST_MAX_WORK) {
    if (!since(version, '16.0.0') || p.n > V16_FOREST_MAX_ROWS) return override;
    return { maxRows: p.n, treeWork: V15_BINARY_FOREST_MAX_WORK, outOfBag: true, ...(override ?? {}) };
  }
  return { maxRows: p.n, ...(override ?? {}) };
}

export interface LinearMemberResult {
  /** the model's linear part; undefined when the blend gives the linear member no weight (or it is not fitted) */
  part?: LinearPart;
  /** the core with the blended out-of-fold scores */
  core: CoreResult;
  /** weights [trees, linear] (undefined when the member was not fitted) */
  weights?: Float64Array;
  alpha?: number;
}

/**
 * Engine 6: the linear member (linear.ts) fitted on the tree ensemble's own folds (each fold model's
 * held-out rows), blended with the trees by non-negative weights summing to one fitted on the
 * out-of-fold raw scores (portfolio.ts, blendWeights: never worse there than the better member
 * alone). Fitted only within a compute budget (LinearOptions: at most 4,000 rows, at most 512 basis
 * terms, and rows × basis terms × outputs at most 300,000 for classification): above it the member was
 * costly and got no weight on the development datasets but one (bench/RESULTS.md, engine 6.0.0).
 */
export function addLinearMember(p: Prepared, core: CoreResult, override?: Partial<LinearOptions>): LinearMemberResult {
  const opts: LinearOptions = { ...DEFAULT_LINEAR_OPTIONS, ...(override ?? {}) };
  const K = p.task === 'multiclass' ? p.nClasses : 1;
  if (p.n > opts.maxRows) return { core };
  const basis = fitBasis(p.X, p.n, p.F, p.categorical, opts.hinges);
  const D = basis.termFeature.length;
  if (D === 0 || D > opts.maxTerms || (p.task === 'regression' ? p.n * D * D > opts.maxGramWork : p.n * D * K > opts.maxWork)) return { core };
  const Z = basisMatrix(basis, p.X, p.n, p.F);
  const folds = core.foldModels.map((f) => f.validRows);
  const fit = fitLinear(Z, p.n, D, p.y, p.task, p.nClasses, folds, opts);
  if (!fit) return { core };
  if (opts.blendBy === 'stack' && p.task === 'binary') {
    const st = stackWeights(core.oofRaw, fit.oofRaw, p.y);
    if (st && st.a > 0 && st.b > 0) {
      const oofRaw = new Float64Array(core.oofRaw.length);
      for (let j = 0; j < oofRaw.length; j++) oofRaw[j] = st.a * core.oofRaw[j] + st.b * fit.oofRaw[j] + st.c;
      const part: LinearPart = {
        treeWeight: st.a,
        linearWeight: st.b,
        nOutputs: K,
        ...basis,
        intercept: Float64Array.from(fit.intercept, (v) => st.b * v + st.c),
        coef: Float64Array.from(fit.coef, (v) => st.b * v),
      };
      return { part, core: { ...core, oofRaw }, weights: Float64Array.of(st.a, st.b), alpha: fit.alpha };
    }
  }
  const blend = opts.blendBy === 'roc_auc' && p.task === 'binary' ? { weights: aucBlend(core.oofRaw, fit.oofRaw, p.y) } : blendWeights([core.oofRaw, fit.oofRaw], p.y, core.lossName, K, opts.blendSteps, opts.blendStart);
  const [wt, wl] = [blend.weights[0], blend.weights[1]];
  if (!(wl > 0)) return { core, weights: blend.weights, alpha: fit.alpha };
  const oofRaw = new Float64Array(core.oofRaw.length);
  for (let j = 0; j < oofRaw.length; j++) oofRaw[j] = wt * core.oofRaw[j] + wl * fit.oofRaw[j];
  const part: LinearPart = {
    treeWeight: wt,
    linearWeight: wl,
    nOutputs: K,
    ...basis,
    intercept: Float64Array.from(fit.intercept, (v) => wl * v),
    coef: Float64Array.from(fit.coef, (v) => wl * v),
  };
  return { part, core: { ...core, oofRaw }, weights: blend.weights, alpha: fit.alpha };
}

/** LinearOptions.blendBy 'roc_auc': weights [1 - w, w], w from {0, 1/20, ..., 1} of greatest out-of-fold ROC AUC of the blended raw scores (the smaller on ties). */
function aucBlend(trees: Float64Array, linear: Float64Array, y: Float64Array): Float64Array {
  const held: number[] = [];
  for (let i = 0; i < y.length; i++) if (!Number.isNaN(trees[i]) && !Number.isNaN(linear[i])) held.push(i);
  const yh = Float64Array.from(held, (i) => y[i]);
  const mixed = new Float64Array(held.length);
  let best = { w: 0, auc: -Infinity };
  for (let s = 0; s <= 20; s++) {
    const w = s / 20;
    held.forEach((i, j) => (mixed[j] = (1 - w) * trees[i] + w * linear[i]));
    const auc = rocAuc(yh, mixed);
    if (auc > best.auc) best = { w, auc };
  }
  return Float64Array.of(1 - best.w, best.w);
}

/**
 * Experiments (LinearOptions.boostFrom): the linear member as the trees' starting point on binary tasks.
 * Returns the hook fitCore calls with its folds (the member fitted on them, each fold model starting
 * from the linear model of its own training rows) and, after the fit, the model's linear part (the
 * fold models' average, whole: the trees' raw score is added to it) or undefined when the member
 * could not be fitted (the trees then boost from the constant start, and the usual blend follows).
 */
export function linearStart(p: Prepared, override?: Partial<LinearOptions>): { offsets: FoldOffsets; part: () => LinearPart | undefined } | undefined {
  const opts: LinearOptions = { ...DEFAULT_LINEAR_OPTIONS, ...(override ?? {}) };
  if (!opts.boostFrom || p.task !== 'binary' || p.n > opts.maxRows) return undefined;
  const basis = fitBasis(p.X, p.n, p.F, p.categorical, opts.hinges);
  const D = basis.termFeature.length;
  if (D === 0 || D > opts.maxTerms || p.n * D > opts.maxWork) return undefined;
  const Z = basisMatrix(basis, p.X, p.n, p.F);
  let part: LinearPart | undefined;
  const offsets: FoldOffsets = (folds) => {
    const fit = fitLinear(Z, p.n, D, p.y, p.task, p.nClasses, folds, opts);
    if (!fit) return null;
    part = { treeWeight: 1, linearWeight: 1, nOutputs: 1, ...basis, intercept: fit.intercept, coef: fit.coef };
    return fit.foldBetas.map((b) => {
      const off = new Float64Array(p.n);
      for (let i = 0; i < p.n; i++) {
        let t = b[0];
        for (let d = 0; d < D; d++) t += Z[i * D + d] * b[d + 1];
        off[i] = t;
      }
      return off;
    });
  };
  return { offsets, part: () => part };
}

export interface ForestMemberResult {
  /** the model's forest part; undefined when the mixture gives the forest no weight (or it is not fitted) */
  part?: ForestPart;
  /** the forest's out-of-fold outputs (n x K, NaN where a row was not held out) */
  oofOut?: Float64Array;
  weight?: number;
}

/**
 * Engine 8: the forest member (forest.ts) grown on each fold model's training rows and scored on its
 * held-out rows (the trees' own folds), its weight in the mixture with the model's outputs fitted on
 * those out-of-fold outputs (mixWeight: never worse there than the better of the two), and, when the
 * weight is positive, a forest grown on all rows for the model. Only on data of at most
 * ForestOptions.maxRows rows: grown to purity, a tree has about 2n nodes, which the artefact stores.
 */
export function addForestMember(p: Prepared, core: CoreResult, seed: number, override?: Partial<ForestOptions>, version: ForestVersion = '8.0.0'): ForestMemberResult {
  const opts: ForestOptions = { ...forestOptions(version, p.task), ...(override ?? {}) };
  if (p.n > opts.maxRows) return {};
  const K = forestOutputs(p.task, p.nClasses);
  if (opts.outOfBag && opts.treeWork !== undefined) return outOfBagForest(p, core, seed, opts);
  const oofOut = new Float64Array(p.n * K).fill(NaN);
  // how many more times than once a row was held out (a repeated cross-fit, EngineConfig.repeats)
  const heldAgain = new Int32Array(p.n);
  const inFold = new Uint8Array(p.n);
  core.foldModels.forEach((fm, f) => {
    inFold.fill(0);
    for (const r of fm.validRows) inFold[r] = 1;
    const trainRows = new Int32Array(p.n - fm.validRows.length);
    let t = 0;
    for (let i = 0; i < p.n; i++) if (!inFold[i]) trainRows[t++] = i;
    const forest = fitForest(p.X, p.F, p.y, p.task, p.nClasses, trainRows, opts.foldTrees, seed + 101 * (f + 1), opts.minSplit, opts.treeWork);
    const out = predictForest(forest, takeRows(p.X, p.F, fm.validRows), fm.validRows.length, p.F);
    fm.validRows.forEach((r, j) => {
      if (Number.isNaN(oofOut[r * K])) oofOut.set(out.subarray(j * K, j * K + K), r * K);
      else {
        for (let k = 0; k < K; k++) oofOut[r * K + k] += out[j * K + k];
        heldAgain[r]++;
      }
    });
  });
  for (let r = 0; r < p.n; r++) if (heldAgain[r] > 0) for (let k = 0; k < K; k++) oofOut[r * K + k] /= heldAgain[r] + 1;
  const modelOut = rawToOutput(p.task, core.oofRaw, p.n, p.nClasses);
  const { weight, loss, zeroLoss } = mixWeight(p.task, p.y, modelOut, oofOut, K, opts.binaryWeightBy);
  if (!(weight > 0) || dropForest(opts, weight, zeroLoss - loss)) return { oofOut, weight };
  const all = Int32Array.from({ length: p.n }, (_, i) => i);
  return { part: { ...fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, opts.trees, seed + 100, opts.minSplit, opts.treeWork), weight }, oofOut, weight };
}

/** Whether the forest member is dropped for a small weight or a small out-of-fold gain (ForestOptions.minWeight, minGain). */
function dropForest(opts: ForestOptions, weight: number, gain: number): boolean {
  return (opts.minWeight !== undefined && weight < opts.minWeight) || (opts.minGain !== undefined && !(gain >= opts.minGain));
}

/**
 * Engine 16 (ForestOptions.outOfBag, with treeWork): the forest member without fold forests. One forest whose trees
 * are each grown on a subsample of at most half the rows (and at most treeWork / mtry), its weight fitted
 * on its out-of-bag outputs on the rows the trees' folds held out; kept when the weight is positive.
 */
function outOfBagForest(p: Prepared, core: CoreResult, seed: number, opts: ForestOptions): ForestMemberResult {
  const K = forestOutputs(p.task, p.nClasses);
  const mtry = p.task !== 'regression' ? Math.max(1, Math.round(Math.sqrt(p.F))) : Math.max(1, Math.round(p.F / 2));
  const treeWork = Math.min(opts.treeWork as number, Math.floor(p.n / 2) * mtry);
  const all = Int32Array.from({ length: p.n }, (_, i) => i);
  const bags = new Uint8Array(opts.trees * p.n);
  const forest = fitForest(p.X, p.F, p.y, p.task, p.nClasses, all, opts.trees, seed + 100, opts.minSplit, treeWork, bags);
  const oofOut = outOfBagOutputs(forest, p.X, p.n, p.F, all, bags);
  // only the rows the trees' folds held out (those the model's out-of-fold outputs cover)
  for (let r = 0; r < p.n; r++) if (Number.isNaN(core.oofRaw[r * (p.task === 'multiclass' ? p.nClasses : 1)])) oofOut.fill(NaN, r * K, r * K + K);
  const modelOut = rawToOutput(p.task, core.oofRaw, p.n, p.nClasses);
  const { weight, loss, zeroLoss } = mixWeight(p.task, p.y, modelOut, oofOut, K, opts.binaryWeightBy);
  if (!(weight > 0) || dropForest(opts, weight, zeroLoss - loss)) return { oofOut, weight };
  return { part: { ...forest, weight }, oofOut, weight };
}

export interface KnnMemberResult {
  /** the model's kNN part; undefined when the mixture gives the member no weight (or it is not fitted) */
  part?: KnnPart;
  /** the member's out-of-fold probabilities (n x 2, NaN where a row was not held out) */
  oofOut?: Float64Array;
  weight?: number;
  /** the out-of-fold ROC AUC the mixture gains over the model's outputs alone */
  gain?: number;
  /** k chosen on each fold's training rows */
  foldKs?: number[];
  /** the relevance power chosen on each fold's training rows (KnnOptions.relevance) */
  foldPowers?: number[];
  /** KnnOptions.bootstrap: the share of resamples without a gain, and the gain's standard deviation */
  noGain?: number;
  gainSd?: number;
  /** KnnOptions.cvGain: the cross-validated gain */
  cvGain?: number;
}

/**
 * Engine 17: the kNN member is kept only when its mixture raises the model's out-of-fold ROC AUC by at
 * least this much (bench/RESULTS.md, nineteenth round of issue 15: below it, its fitted weight is noise
 * on small data and lost more than it won).
 */
export const V17_KNN_MIN_GAIN = 0.008;

/**
 * The kNN member's options of an engine version with an override (experiments) on top; undefined: no
 * member. Engine 17: DEFAULT_KNN_OPTIONS with minGain V17_KNN_MIN_GAIN (binary small data only, see
 * addKnnMember); engines 1-16: no member unless an override asks for one (experiments).
 */
export function knnOptionsFor(version: EngineVersion, override?: Partial<KnnOptions>): KnnOptions | undefined {
  if (since(version, '17.0.0')) return { ...DEFAULT_KNN_OPTIONS, minGain: V17_KNN_MIN_GAIN, ...(override ?? {}) };
  if (!override) return undefined;
  return { ...DEFAULT_KNN_OPTIONS, ...override };
}

/**
 * The k-nearest-neighbours member (knn.ts) on binary small data (at most KnnOptions.maxRows rows):
 * its out-of-fold outputs on the trees' own folds, its weight in the mixture with the model's
 * out-of-fold outputs `modelOut` (after the forest member) fitted by the forest member's binary rule
 * (mixWeight by ROC AUC), and the member kept, with all rows stored, when the weight is positive.
 */
export function addKnnMember(p: Prepared, core: CoreResult, modelOut: Float64Array, opts: KnnOptions): KnnMemberResult {
  if (p.task !== 'binary' || p.n > opts.maxRows || p.n < 10) return {};
  const folds = core.foldModels.map((f) => f.validRows);
  const fit = fitKnnOof(p.X, p.n, p.F, p.categorical, p.y, folds, opts);
  const { weight, loss, zeroLoss } = mixWeight(p.task, p.y, modelOut, fit.oofOut, 2, 'roc_auc');
  const gain = zeroLoss - loss;
  const test = opts.bootstrap && weight > 0 ? knnBootstrap(p.y, modelOut, fit.oofOut, weight, opts.bootstrap.draws) : undefined;
  const cv = opts.cvGain !== undefined && weight > 0 ? knnCvGain(p, folds, modelOut, fit.oofOut) : undefined;
  const chosen = { foldKs: fit.foldKs, foldPowers: fit.foldPowers, ...(test ? { noGain: test.noGain, gainSd: test.sd } : {}), ...(cv !== undefined ? { cvGain: cv } : {}) };
  if (!(weight > 0) || (opts.minGain !== undefined && !(gain >= opts.minGain)) || (test && opts.bootstrap && !(test.noGain <= opts.bootstrap.alpha)) || (cv !== undefined && !(cv >= (opts.cvGain as number)))) return { oofOut: fit.oofOut, weight, gain, ...chosen };
  return { part: knnPart(fit, p.n, p.F, p.y, opts, weight), oofOut: fit.oofOut, weight, gain, ...chosen };
}

/**
 * KnnOptions.cvGain: the pooled out-of-fold ROC AUC of the mixture where each fold's rows are mixed at
 * the weight fitted on the other folds' rows (mixWeight's ROC AUC rule), minus the model's own.
 */
function knnCvGain(p: Prepared, folds: Int32Array[], modelOut: Float64Array, knnOut: Float64Array): number {
  const mixed = new Float64Array(modelOut.length).fill(NaN);
  const inFold = new Uint8Array(p.n);
  for (const valid of folds) {
    inFold.fill(0);
    for (const r of valid) inFold[r] = 1;
    const m = Float64Array.from(modelOut, (v, j) => (inFold[j >> 1] ? NaN : v));
    const { weight } = mixWeight(p.task, p.y, m, knnOut, 2, 'roc_auc');
    for (const r of valid) {
      if (Number.isNaN(modelOut[r * 2]) || Number.isNaN(knnOut[r * 2])) continue;
      mixed[r * 2] = (1 - weight) * modelOut[r * 2] + weight * knnOut[r * 2];
      mixed[r * 2 + 1] = (1 - weight) * modelOut[r * 2 + 1] + weight * knnOut[r * 2 + 1];
    }
  }
  const held: number[] = [];
  for (let i = 0; i < p.n; i++) if (!Number.isNaN(mixed[i * 2])) held.push(i);
  const yh = Float64Array.from(held, (i) => p.y[i]);
  return rocAuc(yh, Float64Array.from(held, (i) => mixed[i * 2 + 1])) - rocAuc(yh, Float64Array.from(held, (i) => modelOut[i * 2 + 1]));
}

/** KnnOptions.bootstrap's test of the mixture at `weight` on the rows held out by both (bootstrapGain). */
function knnBootstrap(y: Float64Array, modelOut: Float64Array, knnOut: Float64Array, weight: number, draws: number): { noGain: number; sd: number } {
  const held: number[] = [];
  for (let i = 0; i < y.length; i++) if (!Number.isNaN(modelOut[i * 2]) && !Number.isNaN(knnOut[i * 2])) held.push(i);
  const yh = Float64Array.from(held, (i) => y[i]);
  const m = Float64Array.from(held, (i) => modelOut[i * 2 + 1]);
  const x = Float64Array.from(held, (i) => (1 - weight) * modelOut[i * 2 + 1] + weight * knnOut[i * 2 + 1]);
  return bootstrapGain(yh, m, x, draws);
}

export interface GroupMemberResult {
  /** the model's group part; undefined when the member is not kept */
  part?: GroupPart;
  /** the model's out-of-fold outputs with the member applied (n x K, NaN where a row was not held out), when kept */
  oofOut?: Float64Array;
  /** the key's features, and the share by which the mixture lowers the model's out-of-fold loss */
  columns?: number[];
  gain?: number;
}

/** Engine 11: the member's weights in the mixture with the model, tried with each SMOOTH_GRID value. */
const GROUP_WEIGHT_STEPS = 20;

/**
 * Engine 11: the group member (group.ts) on the trees' own folds. `modelOut` holds the model's
 * out-of-fold outputs (probabilities n x K, or values; NaN where not held out). The key is searched on
 * those folds; a held row's member output is the rows of its record outside its fold plus `s` rows'
 * worth of its `modelOut` (its `modelOut` alone when no such row exists), mixed with `modelOut` by a
 * weight w in {1/20, ..., 1}. The pair (s, w), s from SMOOTH_GRID, is the one of least out-of-fold loss
 * (for binary tasks, of greatest ROC AUC, the forest member's rule; then only if above the model's
 * own). The member is kept when the loss-minimising pair makes the out-of-fold loss at least
 * GroupOptions.minGain lower than the model's alone, and the key has at least two columns (one column
 * is what the trees' own splits see).
 */
export function addGroupMember(p: Prepared, core: CoreResult, modelOut: Float64Array, override?: Partial<GroupOptions>): GroupMemberResult {
  const opts: GroupOptions = { ...DEFAULT_GROUP_OPTIONS, ...(override ?? {}) };
  if (p.n < opts.minRows) return {};
  const K = groupOutputs(p.task, p.nClasses);
  const regression = p.task === 'regression';
  const nFolds = core.foldModels.length;
  const fold = new Int32Array(p.n).fill(-1);
  core.foldModels.forEach((fm, m) => fm.validRows.forEach((r) => (fold[r] = m)));
  const rows = { X: p.X, n: p.n, F: p.F, y: p.y, K, regression };
  const key = searchGroupKey(rows, fold, nFolds, opts, modelOut);
  if (key.columns.length < 2) return { columns: key.columns };
  const held: number[] = [];
  for (let i = 0; i < p.n; i++) if (fold[i] >= 0) held.push(i);
  const yHeld = Float64Array.from(held, (i) => p.y[i]);
  const scores = new Float64Array(held.length);
  const auc = (out: Float64Array): number => {
    held.forEach((i, j) => (scores[j] = out[i * 2 + 1]));
    return rocAuc(yHeld, scores);
  };
  const members = groupOofs(key.gid, key.groups, p.y, fold, nFolds, K, regression, SMOOTH_GRID, modelOut);
  const mixed = new Float64Array(modelOut.length);
  const mix = (member: Float64Array, w: number): Float64Array => {
    for (let j = 0; j < mixed.length; j++) mixed[j] = (1 - w) * modelOut[j] + w * member[j];
    return mixed;
  };
  /** The pair (s, w) of the grid whose mixture has the lowest `score`, if lower than `start` (else w = 0). */
  const best = (score: (out: Float64Array) => number, start: number): { score: number; s: number; w: number } => {
    let top = { score: start, s: 0, w: 0 };
    members.forEach((member, m) => {
      for (let step = 1; step <= GROUP_WEIGHT_STEPS; step++) {
        const w = step / GROUP_WEIGHT_STEPS;
        const v = score(mix(member, w));
        if (v < top.score) top = { score: v, s: SMOOTH_GRID[m], w };
      }
    });
    return top;
  };
  const modelLoss = outputLoss(p.y, modelOut, K, regression);
  const byLoss = best((out) => outputLoss(p.y, out, K, regression), modelLoss);
  const gain = 1 - byLoss.score / modelLoss;
  if (!(gain >= opts.minGain)) return { columns: key.columns, gain };
  // binary tasks: the pair of greatest out-of-fold ROC AUC, if above the model's own (the forest member's rule)
  const chosen = p.task === 'binary' ? best((out) => -auc(out), -auc(modelOut)) : byLoss;
  if (!(chosen.w > 0)) return { columns: key.columns, gain };
  const table = fitGroupTable(rows, key.columns, chosen.s);
  return { part: { ...table, weight: chosen.w }, oofOut: mix(members[SMOOTH_GRID.indexOf(chosen.s)], chosen.w).slice(), columns: key.columns, gain };
}

export function trainPrepared(p: Prepared, settings: TrainSettings): TrainResult {
  const seed = settings.seed ?? 42;
  const version = settings.engineVersion ?? ENGINE_VERSION;
  const rule = categoryRuleFor(version, settings.config?.categories);
  const r = p.categoryRule;
  if (r.mostFrequent !== rule.mostFrequent || r.minRowsBeyond !== rule.minRowsBeyond || r.maxKept !== rule.maxKept || r.ranges !== rule.ranges) {
    // a programming error: the rows' category codes would not be the ones this version trains on
    throw new Error(`rows prepared by another category rule than engine ${version}'s: prepare(rows, target, task, categoryRuleFor(version))`);
  }
  const onRound = settings.onProgress
    ? (done: number, total: number) => settings.onProgress?.({ done, total })
    : undefined;
  const input = { X: p.X, n: p.n, F: p.F, categorical: p.categorical, y: p.y, task: p.task, nClasses: p.nClasses };
  const start = since(version, '12.0.0') ? linearStart(p, settings.config?.linear) : undefined;
  const started = (): LinearPart | undefined => start?.part();
  const trees = version === '1.0.0'
    ? fitCore(input, resolveConfig(p, settings.config), seed, onRound)
    : version === '4.0.0'
    ? fitCore(input, resolveConfigV4(p, settings.config), seed, onRound)
    : version === '5.0.0' || version === '6.0.0'
    ? fitCore(input, resolveConfigV5(p, settings.config), seed, onRound)
    : version === '7.0.0' || version === '8.0.0' || version === '9.0.0' || version === '10.0.0' || version === '11.0.0'
    ? fitCore(input, resolveConfigV7(p, settings.config), seed, onRound)
    : version === '12.0.0' || version === '13.0.0'
    ? fitCore(input, resolveConfigV12(p, settings.config), seed, onRound, start?.offsets)
    : version === '14.0.0' || version === '15.0.0' || version === '16.0.0' || version === '17.0.0'
    ? fitCore(input, resolveConfigV14(p, settings.config), seed, onRound, start?.offsets)
    : version === '18.0.0'
    ? fitCore(input, resolveConfigV18(p, settings.config), seed, onRound, start?.offsets)
    : version === '19.0.0'
    ? fitCore(input, resolveConfigV19(p, settings.config), seed, onRound, start?.offsets)
    : fitPortfolio(input, resolveMembers(p, settings.config, version), seed, onRound, settings.config?.blendStart).core;
  const withGroup = since(version, '11.0.0');
  const withForest = since(version, '8.0.0');
  const withLinear = since(version, '6.0.0');
  const startPart = started();
  const linear = startPart ? { part: startPart, core: trees } : withLinear ? addLinearMember(p, trees, settings.config?.linear) : undefined;
  const core = linear ? linear.core : trees;
  const forest = withForest ? addForestMember(p, core, seed, forestOverrideFor(version, p, settings.config?.forest), version === '8.0.0' ? '8.0.0' : '9.0.0') : undefined;
  // the model's out-of-fold outputs (NaN where no fold model held a row out); the forest and the group
  // member hold out the trees' rows (the same folds)
  const oofOut = rawToOutput(p.task, core.oofRaw, p.n, p.nClasses);
  if (forest?.part && forest.oofOut) mixOutputs(oofOut, forest.oofOut, forest.part.weight);
  const knnOpts = knnOptionsFor(version, settings.config?.knn);
  // small data, unless an override raises the member's row limit above it (experiments, twenty-first
  // round); 17.0.0's limit is V5_SMALL_WORK, so its condition is isSmallData's
  const knn = knnOpts && (isSmallData(p) || knnOpts.maxRows > V5_SMALL_WORK) ? addKnnMember(p, core, oofOut, knnOpts) : undefined;
  if (knn?.part && knn.oofOut) mixOutputs(oofOut, knn.oofOut, knn.part.weight);
  const group = withGroup ? addGroupMember(p, core, oofOut, groupOptionsFor(version, settings.config?.group)) : undefined;
  if (group?.part && group.oofOut) oofOut.set(group.oofOut);
  const a = p.analysis;
  const model: TabularModel = {
    engine: { id: ENGINE_ID, version },
    formatVersion: since(version, '17.0.0') ? 5 : withGroup ? 4 : withForest ? 3 : withLinear ? 2 : 1,
    task: p.task,
    target: a.report.target,
    classes: a.target.classes,
    inputColumns: a.columns.map((c) => c.name),
    columns: a.columns,
    features: a.features,
    predictor: core.predictor,
    ...(linear?.part ? { linear: linear.part } : {}),
    ...(forest?.part ? { forest: forest.part } : {}),
    ...(knn?.part ? { knn: knn.part } : {}),
    ...(group?.part ? { group: group.part } : {}),
  };
  // validation on out-of-fold rows
  const K = p.task === 'multiclass' ? p.nClasses : 1;
  const rowsHeld: number[] = [];
  for (let i = 0; i < p.n; i++) if (!Number.isNaN(core.oofRaw[i * K])) rowsHeld.push(i);
  const yHeld = Float64Array.from(rowsHeld, (r) => p.y[r]);
  const outHeld = takeRows(oofOut, forestOutputs(p.task, p.nClasses), rowsHeld);
  const validation = scoreOutputs(p.task, yHeld, outHeld, p.nClasses, p.y);
  let topFactors: Factor[] | undefined;
  if (settings.explain) {
    const imp = permutationImportance(p.X, p.F, p.y, p.task, p.nClasses, core.foldModels, a.features, seed + 7);
    topFactors = toShares(imp);
    if (topFactors.length === 0) topFactors = toShares(gainImportance(core.predictor, a.features));
  }
  return { model, report: a.report, validation, topFactors, core, ...(group?.columns ? { group: { columns: group.columns, gain: group.gain } } : {}), ...(knn && knn.weight !== undefined ? { knn: { weight: knn.weight, gain: knn.gain, foldKs: knn.foldKs, k: knn.part?.k, ...(knn.foldPowers ? { foldPowers: knn.foldPowers } : {}), ...(knn.noGain !== undefined ? { noGain: knn.noGain, gainSd: knn.gainSd } : {}), ...(knn.cvGain !== undefined ? { cvGain: knn.cvGain } : {}) } } : {}) };
}
