/** Evaluation metrics (pure functions). Probabilities are row-major (n x K). */

/**
 * ROC AUC with tie handling (average ranks): the Mann-Whitney U of the positives' scores against the
 * negatives', over pos x neg. U is counted by merging the two classes' scores, each sorted by the typed
 * array's native sort; every term is a whole or half number, so U is exact and the answer is bit for bit
 * that of the rank-sum formula (rocAucByRanks), which scores holding NaN still take.
 */
export function rocAuc(y: ArrayLike<number>, score: ArrayLike<number>): number {
  const n = y.length;
  let pos = 0;
  for (let i = 0; i < n; i++) {
    if (Number.isNaN(score[i])) return rocAucByRanks(y, score);
    if (y[i] === 1) pos++;
  }
  const neg = n - pos;
  if (pos === 0 || neg === 0) return NaN;
  const positives = new Float64Array(pos);
  const negatives = new Float64Array(neg);
  for (let i = 0, p = 0, q = 0; i < n; i++) {
    if (y[i] === 1) positives[p++] = score[i];
    else negatives[q++] = score[i];
  }
  positives.sort();
  negatives.sort();
  // for each positive in ascending order: the negatives below it, and half of those equal to it
  let u = 0;
  let below = 0;
  for (let p = 0; p < pos; ) {
    const s = positives[p];
    while (below < neg && negatives[below] < s) below++;
    let tied = below;
    while (tied < neg && negatives[tied] === s) tied++;
    let same = p;
    while (same < pos && positives[same] === s) same++;
    u += (same - p) * (below + (tied - below) / 2);
    p = same;
  }
  return u / (pos * neg);
}

/** ROC AUC by the average ranks of all scores (rocAuc's definition; its path for scores holding NaN). */
export function rocAucByRanks(y: ArrayLike<number>, score: ArrayLike<number>): number {
  const n = y.length;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => score[a] - score[b]);
  let pos = 0;
  for (let i = 0; i < n; i++) if (y[i] === 1) pos++;
  const neg = n - pos;
  if (pos === 0 || neg === 0) return NaN;
  let rankSum = 0;
  let i = 0;
  while (i < n) {
    let j = i;
    while (j + 1 < n && score[order[j + 1]] === score[order[i]]) j++;
    const avg = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) if (y[order[k]] === 1) rankSum += avg;
    i = j + 1;
  }
  return (rankSum - (pos * (pos + 1)) / 2) / (pos * neg);
}

export function logLoss(y: ArrayLike<number>, proba: ArrayLike<number>, K: number): number {
  let s = 0;
  const eps = 1e-15;
  for (let i = 0; i < y.length; i++) {
    const p = Math.min(1 - eps, Math.max(eps, proba[i * K + y[i]]));
    s -= Math.log(p);
  }
  return s / y.length;
}

export function accuracy(y: ArrayLike<number>, proba: ArrayLike<number>, K: number): number {
  let ok = 0;
  for (let i = 0; i < y.length; i++) {
    let best = 0;
    for (let k = 1; k < K; k++) if (proba[i * K + k] > proba[i * K + best]) best = k;
    if (best === y[i]) ok++;
  }
  return ok / y.length;
}

export function rmse(y: ArrayLike<number>, pred: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < y.length; i++) s += (y[i] - pred[i]) ** 2;
  return Math.sqrt(s / y.length);
}
