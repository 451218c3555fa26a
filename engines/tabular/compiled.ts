/**
 * Optional accelerator for batch inference: the flat predictor's trees are turned into plain
 * JavaScript if/else code (thresholds and leaf values as exact number literals), compiled once
 * per predictor with `new Function` and cached. Summation order per output is the same as
 * predictRaw's (initial score, then trees in order), so results are bit-identical; the flat
 * predictor stays the reference and the serialised form. No I/O: pure computation.
 */
import { predictRawBlocked, type FlatPredictor } from './predictor';

type Kernel = (X: Float64Array, n: number, raw: Float64Array, cats: Uint8Array[]) => void;

interface Compiled {
  kernels: Kernel[];
  cats: Uint8Array[];
}

const cache = new WeakMap<FlatPredictor, Compiled | null>();
const TREES_PER_KERNEL = 20;

function lit(x: number): string {
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  if (Object.is(x, -0)) return '-0';
  return String(x);
}

function compile(p: FlatPredictor): Compiled {
  const K = p.nOutputs;
  const F = p.nFeatures;
  const cats: Uint8Array[] = [];
  const catIndex = new Map<number, number>();
  const kernels: Kernel[] = [];
  const T = p.treeRoot.length;
  const emit = (node: number, acc: string, out: string[], depth: number): void => {
    const pad = ' '.repeat(Math.min(depth, 40));
    if (node < 0) {
      out.push(`${pad}${acc} += ${lit(p.leafValue[~node])};`);
      return;
    }
    const f = p.nodeFeature[node];
    const fl = p.nodeFlags[node];
    let cond: string;
    if ((fl & 2) === 0) {
      const thr = lit(p.nodeThreshold[node]);
      cond = (fl & 1) === 0 ? `X[b + ${f}] <= ${thr}` : `!(X[b + ${f}] > ${thr})`;
    } else {
      // membership table over codes, missing handled by the flag
      let ci = catIndex.get(node);
      if (ci === undefined) {
        const len = p.nodeCatLen[node] * 32;
        const tbl = new Uint8Array(len);
        for (let c = 0; c < len; c++) tbl[c] = (p.catBits[p.nodeCatStart[node] + (c >>> 5)] >>> (c & 31)) & 1;
        ci = cats.length;
        cats.push(tbl);
        catIndex.set(node, ci);
      }
      const dl = (fl & 1) === 1 ? 'true' : 'false';
      cond = `(v = X[b + ${f}], v !== v ? ${dl} : (v >= 0 && v < ${p.nodeCatLen[node] * 32} && c${ci}[v | 0] === 1))`;
    }
    out.push(`${pad}if (${cond}) {`);
    emit(p.nodeLeft[node], acc, out, depth + 1);
    out.push(`${pad}} else {`);
    emit(p.nodeRight[node], acc, out, depth + 1);
    out.push(`${pad}}`);
  };
  for (let t0 = 0; t0 < T; t0 += TREES_PER_KERNEL) {
    const t1 = Math.min(T, t0 + TREES_PER_KERNEL);
    const body: string[] = [];
    const catStart = cats.length;
    const trees: string[] = [];
    for (let t = t0; t < t1; t++) emit(p.treeRoot[t], `s${p.treeOutput[t]}`, trees, 2);
    const catDecl: string[] = [];
    for (let c = catStart; c < cats.length; c++) catDecl.push(`const c${c} = cats[${c}];`);
    body.push('"use strict";');
    body.push(...catDecl);
    body.push('let v = 0;');
    body.push(`for (let i = 0; i < n; i++) {`);
    body.push(` const b = i * ${F};`);
    body.push(` const o = i * ${K};`);
    for (let k = 0; k < K; k++) body.push(` let s${k} = raw[o + ${k}];`);
    body.push(...trees);
    for (let k = 0; k < K; k++) body.push(` raw[o + ${k}] = s${k};`);
    body.push('}');
    body.push('void v;');
    kernels.push(new Function('X', 'n', 'raw', 'cats', body.join('\n')) as Kernel);
  }
  return { kernels, cats };
}

/** Raw scores through compiled kernels; returns null when code generation is unavailable. */
export function predictRawCompiled(p: FlatPredictor, X: Float64Array, n: number): Float64Array | null {
  let c = cache.get(p);
  if (c === undefined) {
    try {
      c = compile(p);
    } catch {
      c = null;
    }
    cache.set(p, c);
  }
  if (c === null) return null;
  const K = p.nOutputs;
  const raw = new Float64Array(n * K);
  for (let i = 0; i < n; i++) for (let k = 0; k < K; k++) raw[i * K + k] = p.init[k];
  for (const kern of c.kernels) kern(X, n, raw, c.cats);
  return raw;
}

/**
 * Batch inference entry point: compiled kernels for large batches (compilation costs about as much
 * as scoring a thousand rows, and is cached per predictor object), the packed flat walk otherwise.
 */
export function predictRawFast(p: FlatPredictor, X: Float64Array, n: number, compileFrom = 2000): Float64Array {
  if (n >= compileFrom || cache.get(p)) {
    const r = predictRawCompiled(p, X, n);
    if (r) return r;
  }
  return predictRawBlocked(p, X, n);
}
