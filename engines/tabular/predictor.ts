/**
 * Flat predictor: all trees of a model in a few typed arrays. Used for inference and
 * serialisation only; it works on raw feature values (row-major Float64Array, NaN = missing),
 * never on the training data or bins.
 *
 * Node child pointers: >= 0 is a global node index, < 0 is ~(global leaf index).
 * Node flags: bit 0 = missing goes left, bit 1 = categorical split (bitset over category codes).
 */
import type { BinnedFeatureInfo } from './binning';
import type { BuiltTree } from './grower';

export interface FlatPredictor {
  nFeatures: number;
  nOutputs: number;
  /** initial raw score per output */
  init: Float64Array;
  /** per tree: root pointer (node index, or ~leaf for single-leaf trees) and output index */
  treeRoot: Int32Array;
  treeOutput: Int32Array;
  nodeFeature: Int32Array;
  nodeThreshold: Float64Array;
  nodeLeft: Int32Array;
  nodeRight: Int32Array;
  nodeFlags: Uint8Array;
  /** categorical nodes: start (in 32-bit words) and length of the bitset in catBits */
  nodeCatStart: Int32Array;
  nodeCatLen: Int32Array;
  catBits: Uint32Array;
  leafValue: Float64Array;
  /** split gain per node (for importance by gain) */
  nodeGain: Float64Array;
}

/** Builder that accumulates built trees into the flat form, scaling leaf values. */
export class PredictorBuilder {
  private roots: number[] = [];
  private outputs: number[] = [];
  private feat: number[] = [];
  private thr: number[] = [];
  private left: number[] = [];
  private right: number[] = [];
  private flags: number[] = [];
  private catStart: number[] = [];
  private catLen: number[] = [];
  private bits: number[] = [];
  private leaves: number[] = [];
  private gains: number[] = [];

  constructor(private readonly nFeatures: number, private readonly nOutputs: number) {}

  get treeCount(): number {
    return this.roots.length;
  }

  addTree(tree: BuiltTree, info: BinnedFeatureInfo, output: number, scale: number): void {
    const nodeBase = this.feat.length;
    const leafBase = this.leaves.length;
    const mapChild = (c: number): number => (c >= 0 ? c + nodeBase : ~(~c + leafBase));
    for (let k = 0; k < tree.feature.length; k++) {
      const f = tree.feature[k];
      this.feat.push(f);
      this.left.push(mapChild(tree.left[k]));
      this.right.push(mapChild(tree.right[k]));
      this.gains.push(tree.gain[k]);
      if (tree.isCategorical[k]) {
        const member = tree.catLeft[k] as Uint8Array;
        const words = Math.ceil(member.length / 32);
        this.catStart.push(this.bits.length);
        this.catLen.push(words);
        for (let w = 0; w < words; w++) {
          let word = 0;
          for (let b = 0; b < 32; b++) {
            const c = w * 32 + b;
            if (c < member.length && member[c] === 1) word |= 1 << b;
          }
          this.bits.push(word >>> 0);
        }
        this.thr.push(0);
        this.flags.push((tree.defaultLeft[k] ? 1 : 0) | 2);
      } else {
        const t = tree.thresholdBin[k];
        const e = info.edges[f];
        this.thr.push(t < e.length ? e[t] : Infinity);
        this.catStart.push(0);
        this.catLen.push(0);
        this.flags.push(tree.defaultLeft[k] ? 1 : 0);
      }
    }
    for (const v of tree.leafValue) this.leaves.push(v * scale);
    this.roots.push(tree.feature.length > 0 ? nodeBase : ~leafBase);
    this.outputs.push(output);
  }

  build(init: Float64Array): FlatPredictor {
    return {
      nFeatures: this.nFeatures,
      nOutputs: this.nOutputs,
      init: Float64Array.from(init),
      treeRoot: Int32Array.from(this.roots),
      treeOutput: Int32Array.from(this.outputs),
      nodeFeature: Int32Array.from(this.feat),
      nodeThreshold: Float64Array.from(this.thr),
      nodeLeft: Int32Array.from(this.left),
      nodeRight: Int32Array.from(this.right),
      nodeFlags: Uint8Array.from(this.flags),
      nodeCatStart: Int32Array.from(this.catStart),
      nodeCatLen: Int32Array.from(this.catLen),
      catBits: Uint32Array.from(this.bits),
      leafValue: Float64Array.from(this.leaves),
      nodeGain: Float64Array.from(this.gains),
    };
  }
}

/** Merges several predictors with weights (used to average bagged / cross-fitted models). */
export function mergePredictors(parts: FlatPredictor[], weights: number[]): FlatPredictor {
  const first = parts[0];
  const K = first.nOutputs;
  const init = new Float64Array(K);
  let nTrees = 0;
  let nNodes = 0;
  let nLeaves = 0;
  let nBits = 0;
  for (let p = 0; p < parts.length; p++) {
    for (let k = 0; k < K; k++) init[k] += weights[p] * parts[p].init[k];
    nTrees += parts[p].treeRoot.length;
    nNodes += parts[p].nodeFeature.length;
    nLeaves += parts[p].leafValue.length;
    nBits += parts[p].catBits.length;
  }
  const out: FlatPredictor = {
    nFeatures: first.nFeatures,
    nOutputs: K,
    init,
    treeRoot: new Int32Array(nTrees),
    treeOutput: new Int32Array(nTrees),
    nodeFeature: new Int32Array(nNodes),
    nodeThreshold: new Float64Array(nNodes),
    nodeLeft: new Int32Array(nNodes),
    nodeRight: new Int32Array(nNodes),
    nodeFlags: new Uint8Array(nNodes),
    nodeCatStart: new Int32Array(nNodes),
    nodeCatLen: new Int32Array(nNodes),
    catBits: new Uint32Array(nBits),
    leafValue: new Float64Array(nLeaves),
    nodeGain: new Float64Array(nNodes),
  };
  let t0 = 0;
  let n0 = 0;
  let l0 = 0;
  let b0 = 0;
  const shift = (c: number): number => (c >= 0 ? c + n0 : ~(~c + l0));
  for (let p = 0; p < parts.length; p++) {
    const q = parts[p];
    for (let t = 0; t < q.treeRoot.length; t++) {
      out.treeRoot[t0 + t] = shift(q.treeRoot[t]);
      out.treeOutput[t0 + t] = q.treeOutput[t];
    }
    for (let j = 0; j < q.nodeFeature.length; j++) {
      out.nodeFeature[n0 + j] = q.nodeFeature[j];
      out.nodeThreshold[n0 + j] = q.nodeThreshold[j];
      out.nodeLeft[n0 + j] = shift(q.nodeLeft[j]);
      out.nodeRight[n0 + j] = shift(q.nodeRight[j]);
      out.nodeFlags[n0 + j] = q.nodeFlags[j];
      out.nodeCatStart[n0 + j] = q.nodeCatStart[j] + b0;
      out.nodeCatLen[n0 + j] = q.nodeCatLen[j];
      out.nodeGain[n0 + j] = q.nodeGain[j] * weights[p];
    }
    for (let j = 0; j < q.leafValue.length; j++) out.leafValue[l0 + j] = q.leafValue[j] * weights[p];
    out.catBits.set(q.catBits, b0);
    t0 += q.treeRoot.length;
    n0 += q.nodeFeature.length;
    l0 += q.leafValue.length;
    b0 += q.catBits.length;
  }
  return out;
}

/** Whether a row (its features from X[base]) goes left at an inner node: missing values by the node's default, numbers by the threshold, categories by the node's bitset. */
export function goesLeft(p: FlatPredictor, node: number, X: Float64Array, base: number): boolean {
  const v = X[base + p.nodeFeature[node]];
  const fl = p.nodeFlags[node];
  if (v !== v) return (fl & 1) === 1;
  if ((fl & 2) === 0) return v <= p.nodeThreshold[node];
  const c = v | 0;
  const w = c >>> 5;
  return c >= 0 && w < p.nodeCatLen[node] && ((p.catBits[p.nodeCatStart[node] + w] >>> (c & 31)) & 1) === 1;
}

/** The leaf (as ~index) a row reaches from `node`. */
export function leafNode(p: FlatPredictor, node: number, X: Float64Array, base: number): number {
  while (node >= 0) node = goesLeft(p, node, X, base) ? p.nodeLeft[node] : p.nodeRight[node];
  return node;
}

/**
 * Raw scores (n x K, row-major) for a row-major feature matrix (n x nFeatures).
 */
export function predictRaw(p: FlatPredictor, X: Float64Array, n: number, out?: Float64Array): Float64Array {
  const K = p.nOutputs;
  const F = p.nFeatures;
  const raw = out ?? new Float64Array(n * K);
  const { treeRoot, treeOutput, leafValue, init } = p;
  const T = treeRoot.length;
  for (let i = 0; i < n; i++) {
    const base = i * F;
    const ob = i * K;
    for (let k = 0; k < K; k++) raw[ob + k] = init[k];
    for (let t = 0; t < T; t++) raw[ob + treeOutput[t]] += leafValue[~leafNode(p, treeRoot[t], X, base)];
  }
  return raw;
}

/** Packed node layout for fast inference: per node [feature, left, right, flags] in one Int32Array. */
export interface PackedNodes {
  nodes: Int32Array;
}

const packCache = new WeakMap<FlatPredictor, Int32Array>();

function packedNodes(p: FlatPredictor): Int32Array {
  let packed = packCache.get(p);
  if (!packed) {
    const N = p.nodeFeature.length;
    packed = new Int32Array(N * 4);
    for (let j = 0; j < N; j++) {
      packed[j * 4] = p.nodeFeature[j];
      packed[j * 4 + 1] = p.nodeLeft[j];
      packed[j * 4 + 2] = p.nodeRight[j];
      packed[j * 4 + 3] = p.nodeFlags[j];
    }
    packCache.set(p, packed);
  }
  return packed;
}

/**
 * Same result as predictRaw, faster on large batches: rows are processed in blocks, each tree is
 * applied to the whole block before the next (nodes stay in cache), with a packed node layout.
 */
export function predictRawBlocked(p: FlatPredictor, X: Float64Array, n: number, out?: Float64Array): Float64Array {
  const K = p.nOutputs;
  const F = p.nFeatures;
  const raw = out ?? new Float64Array(n * K);
  const nodes = packedNodes(p);
  const { treeRoot, treeOutput, nodeThreshold, nodeCatStart, nodeCatLen, catBits, leafValue, init } = p;
  const T = treeRoot.length;
  for (let i = 0; i < n; i++) for (let k = 0; k < K; k++) raw[i * K + k] = init[k];
  const BLOCK = 128;
  for (let b0 = 0; b0 < n; b0 += BLOCK) {
    const b1 = Math.min(n, b0 + BLOCK);
    for (let t = 0; t < T; t++) {
      const root = treeRoot[t];
      const o = treeOutput[t];
      if (root < 0) {
        const v = leafValue[~root];
        for (let i = b0; i < b1; i++) raw[i * K + o] += v;
        continue;
      }
      for (let i = b0; i < b1; i++) {
        const base = i * F;
        let node = root;
        do {
          const q = node << 2;
          const v = X[base + nodes[q]];
          const fl = nodes[q + 3];
          let right: number;
          if (fl === 0) right = v <= nodeThreshold[node] ? 0 : 1;
          else if (v !== v) right = (fl & 1) ^ 1;
          else if ((fl & 2) === 0) right = v <= nodeThreshold[node] ? 0 : 1;
          else {
            const c = v | 0;
            const w = c >>> 5;
            right = c >= 0 && w < nodeCatLen[node] && ((catBits[nodeCatStart[node] + w] >>> (c & 31)) & 1) === 1 ? 0 : 1;
          }
          node = nodes[q + 1 + right];
        } while (node >= 0);
        raw[i * K + o] += leafValue[~node];
      }
    }
  }
  return raw;
}
