/** Evaluation metrics (pure functions). Probabilities are row-major (n x K). */

/** ROC AUC with tie handling (average ranks). */
export function rocAuc(y: ArrayLike<number>, score: ArrayLike<number>): number {
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
