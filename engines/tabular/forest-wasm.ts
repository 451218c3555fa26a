/**
 * The forest member's batch walk as a WebAssembly kernel: the same leaves, added in the same order,
 * so the outputs are predictForestWalk's bit for bit (forest.ts keeps that walk as the reference, for
 * one row and for batches too small to pay for the copy of another forest).
 *
 * Why: the forest's trees are grown to purity (700-1,800 nodes, paths of 9-14 steps on average and up
 * to 44), and a walk is a chain of dependent loads (node, the row's value, the next node) whose
 * direction is a coin toss for the branch predictor. In JavaScript, rows walked side by side without a
 * branch (+(x <= t) compiles to setcc) gain little: each step also pays bounds, map and overflow checks
 * and spills (bench/RESULTS.md). Here a step is about ten instructions without a branch (`f64.le` is 0
 * or 1), and LANES rows walk one tree in lockstep so that their chains overlap.
 *
 * The thread has one kernel and one memory, which holds one forest at a time: when a batch comes for
 * another forest than the last, its arrays are copied in and a wasm function writes its records (about
 * a millisecond for 100,000 nodes). Nothing is kept per forest but its roots, so a cached model costs
 * no more memory than before; the memory grows to the largest forest walked and a block of rows.
 * Node i is a 16-byte record at RECORDS + 16 i:
 * - internal: f64 threshold; i32 feature × 8; i32 address of the right child (the left child's is 16
 *   less: fitForest gives every node its two children side by side, left then right; a forest whose
 *   children are not is walked by the reference instead);
 * - leaf: a quiet NaN whose low word is the address of its K values, feature 0, and its own address as
 *   the right child. `x <= NaN` is false, so a leaf's step goes "right" to itself: a row that reached
 *   its leaf stays there while the other lanes walk on, and the group stops once no lane moved.
 * Then the leaves' values, then a block of rows (row-major, as X) and their sums (rows × K).
 *
 * The sums start at +0 and add each tree's leaf values in tree order (f64.add is IEEE addition, as
 * JavaScript's +); the division by the tree count is done in JavaScript, as the reference does.
 */
import type { Forest } from './forest';
import { Code, OP, WASM_PAGE, wasmApi, wasmModule, type WasmFunction, type WasmMemory } from './wasm';

/** Rows walking a tree together: enough to overlap their chains, few enough to stay in registers. */
const LANES = 6;
/** Steps between the checks whether a group's rows all reached their leaves (a step more at most). */
const UNROLL = 2;
/** Address of node 0's record. */
const RECORDS = 64;
/**
 * Larger forests are walked by the reference: the memory, which never shrinks, holds about 32 bytes a
 * node of the largest forest walked (16.0.0's largest, 60 trees on 12,000-row subsamples, has at most
 * 1.5 million nodes).
 */
const MAX_NODES = 1 << 21;
/** At most this many rows are copied in and walked tree by tree (bounded by the bytes of their values). */
const MAX_BLOCK_ROWS = 8192;
const BLOCK_BYTES = 512 * 1024;
/** The leaf's NaN: the high word of a quiet NaN (little-endian: the low word, the leaf's address, first). */
const NAN_HIGH = 0x7ff80000;

/**
 * A walk of `groups` groups of `lanes` consecutive rows through one tree, adding each row's leaf values
 * to its sums. Parameters: root (address), x (address of the first row), groups, row bytes (F × 8),
 * sums (address of the first row's), K. With `outputs` 1 or 2 the leaf values are added unrolled,
 * otherwise in a loop over K.
 */
function walkFunction(lanes: number, outputs: number): WasmFunction {
  const ROOT = 0;
  const X = 1;
  const GROUPS = 2;
  const ROW = 3;
  const OUT = 4;
  const K = 5;
  const A = 6;
  const XB = A + lanes;
  const NEXT = XB + lanes;
  const MOVED = NEXT + 1;
  const LEAF = NEXT + 2;
  const k = NEXT + 3;
  const c = new Code();
  const step = (j: number, track: boolean): void => {
    // right child's address − 16 × (x <= threshold)
    c.get(A + j).loadI32(12);
    c.get(XB + j).get(A + j).loadI32(8).op(OP.i32Add).loadF64(0);
    c.get(A + j).loadF64(0);
    c.op(OP.f64Le).i32(4).op(OP.i32Shl).op(OP.i32Sub);
    if (track) c.tee(NEXT).get(A + j).op(OP.i32Xor).get(MOVED).op(OP.i32Or).set(MOVED).get(NEXT);
    c.set(A + j);
  };
  c.block().loop();
  c.get(GROUPS).op(OP.i32Eqz).brIf(1);
  for (let j = 0; j < lanes; j++) c.get(ROOT).set(A + j);
  c.get(X).set(XB);
  for (let j = 1; j < lanes; j++) c.get(XB + j - 1).get(ROW).op(OP.i32Add).set(XB + j);
  c.loop();
  for (let u = 1; u < UNROLL; u++) for (let j = 0; j < lanes; j++) step(j, false);
  c.i32(0).set(MOVED);
  for (let j = 0; j < lanes; j++) step(j, true);
  c.get(MOVED).brIf(0);
  c.end();
  for (let j = 0; j < lanes; j++) {
    c.get(A + j).loadI32(0).set(LEAF);
    if (outputs === 1 || outputs === 2) {
      for (let o = 0; o < outputs; o++) c.get(OUT).get(OUT).loadF64(o * 8).get(LEAF).loadF64(o * 8).op(OP.f64Add).storeF64(o * 8);
      c.get(OUT).i32(outputs * 8).op(OP.i32Add).set(OUT);
      continue;
    }
    c.i32(0).set(k);
    c.block().loop();
    c.get(k).get(K).op(OP.i32GeU).brIf(1);
    c.get(OUT).get(k).i32(3).op(OP.i32Shl).op(OP.i32Add);
    c.get(OUT).get(k).i32(3).op(OP.i32Shl).op(OP.i32Add).loadF64(0);
    c.get(LEAF).get(k).i32(3).op(OP.i32Shl).op(OP.i32Add).loadF64(0);
    c.op(OP.f64Add).storeF64(0);
    c.get(k).i32(1).op(OP.i32Add).set(k).br(0);
    c.end().end();
    c.get(OUT).get(K).i32(3).op(OP.i32Shl).op(OP.i32Add).set(OUT);
  }
  c.get(X).get(ROW).i32(lanes).op(OP.i32Mul).op(OP.i32Add).set(X);
  c.get(GROUPS).i32(1).op(OP.i32Sub).set(GROUPS);
  c.br(0);
  c.end().end();
  return { name: `walk${lanes}k${outputs}`, params: 6, locals: 2 * lanes + 4, code: c };
}

/**
 * Writes the records of nodes 0..n-1 from the forest's arrays copied into the memory: feature (i32),
 * threshold (f64) and left (i32) at the addresses given, the leaf values at `leaves`, K × 8 bytes each.
 * Without a branch (half the nodes are leaves, in no order a predictor could learn): each word is a
 * `select` of the leaf's and the internal node's.
 */
function buildFunction(): WasmFunction {
  const N = 0;
  const FEATURE = 1;
  const THRESHOLD = 2;
  const LEFT = 3;
  const LEAF_BYTES = 4;
  const LEAVES = 5;
  const i = 6;
  const rec = 7;
  const f = 8;
  const l = 9;
  const leaf = 10;
  const thr = 11;
  const c = new Code();
  c.block().loop();
  c.get(i).get(N).op(OP.i32GeU).brIf(1);
  c.get(i).i32(4).op(OP.i32Shl).i32(RECORDS).op(OP.i32Add).set(rec);
  c.get(FEATURE).get(i).i32(2).op(OP.i32Shl).op(OP.i32Add).loadI32(0).tee(f);
  c.i32(0).op(OP.i32LtS).set(leaf);
  c.get(LEFT).get(i).i32(2).op(OP.i32Shl).op(OP.i32Add).loadI32(0).set(l);
  c.get(THRESHOLD).get(i).i32(3).op(OP.i32Shl).op(OP.i32Add).set(thr);
  // leaf: a NaN whose low word is the address of its values; internal: the threshold's two words
  c.get(rec).get(l).get(LEAF_BYTES).op(OP.i32Mul).get(LEAVES).op(OP.i32Add).get(thr).loadI32(0).get(leaf).op(OP.select).storeI32(0);
  c.get(rec).i32(NAN_HIGH).get(thr).loadI32(4).get(leaf).op(OP.select).storeI32(4);
  // leaf: feature 0 and itself as the right child
  c.get(rec).i32(0).get(f).i32(3).op(OP.i32Shl).get(leaf).op(OP.select).storeI32(8);
  c.get(rec).get(rec).get(l).i32(1).op(OP.i32Add).i32(4).op(OP.i32Shl).i32(RECORDS).op(OP.i32Add).get(leaf).op(OP.select).storeI32(12);
  c.get(i).i32(1).op(OP.i32Add).set(i).br(0);
  c.end().end();
  return { name: 'build', params: 6, locals: 6, code: c };
}

type Walk = (root: number, x: number, groups: number, rowBytes: number, out: number, K: number) => void;
type Build = (n: number, feature: number, threshold: number, left: number, leafBytes: number, leaves: number) => void;

interface Kernel {
  memory: WasmMemory;
  f64: Float64Array;
  i32: Int32Array;
  /** [lanes walk, one-row walk] for K = 1, K = 2 and any K */
  walks: Record<1 | 2 | 0, [Walk, Walk]>;
  build: Build;
  /** the forest whose records the memory holds */
  loaded: WeakRef<Forest> | null;
}

let kernel: Kernel | null | undefined;

function makeKernel(): Kernel | null {
  const api = wasmApi();
  if (!api) return null;
  const functions: WasmFunction[] = [buildFunction()];
  for (const outputs of [1, 2, 0]) functions.push(walkFunction(LANES, outputs), walkFunction(1, outputs));
  const module = new api.Module(wasmModule(functions));
  const memory = new api.Memory({ initial: 1 });
  const { exports } = new api.Instance(module, { env: { memory } });
  const pair = (outputs: number): [Walk, Walk] => [exports[`walk${LANES}k${outputs}`] as Walk, exports[`walk1k${outputs}`] as Walk];
  return { memory, f64: new Float64Array(memory.buffer), i32: new Int32Array(memory.buffer), walks: { 1: pair(1), 2: pair(2), 0: pair(0) }, build: exports.build as Build, loaded: null };
}

/** This thread's kernel, made on first use; null where WebAssembly is unavailable or refused it. */
function getKernel(): Kernel | null {
  if (kernel === undefined) {
    try {
      kernel = makeKernel();
    } catch {
      kernel = null;
    }
  }
  return kernel;
}

/** What a walk of a forest needs besides its arrays. */
interface Layout {
  /** each tree's root address */
  roots: Int32Array;
  /** address of the leaf values (the records end there) */
  leaves: number;
  /** the largest feature an internal node reads */
  maxFeature: number;
}

const layouts = new WeakMap<Forest, Layout | null>();

/**
 * Where a forest's records and leaf values go, or null when the kernel cannot walk it as the reference
 * does: children not side by side (left, then right), a child not after its parent (a walk might not
 * end), a leaf's values outside leafValue, or more nodes than MAX_NODES. Checked once per forest.
 */
export function forestLayout(forest: Forest): Layout | null {
  let layout = layouts.get(forest);
  if (layout === undefined) {
    layout = checkForest(forest);
    layouts.set(forest, layout);
  }
  return layout;
}

function checkForest(forest: Forest): Layout | null {
  const { feature, left, right, leafValue, treeRoot, nOutputs: K } = forest;
  const N = feature.length;
  if (N > MAX_NODES || leafValue.length > 2 * MAX_NODES * K || forest.threshold.length !== N || left.length !== N || right.length !== N) return null;
  let maxFeature = 0;
  for (let i = 0; i < N; i++) {
    const f = feature[i];
    const l = left[i];
    if (f < 0) {
      if (!(l >= 0 && l * K + K <= leafValue.length)) return null;
    } else {
      if (!(l > i && right[i] === l + 1 && l + 1 < N)) return null;
      if (f > maxFeature) maxFeature = f;
    }
  }
  const roots = new Int32Array(treeRoot.length);
  for (let t = 0; t < treeRoot.length; t++) {
    if (!(treeRoot[t] >= 0 && treeRoot[t] < N)) return null;
    roots[t] = RECORDS + 16 * treeRoot[t];
  }
  return { roots, leaves: RECORDS + 16 * N, maxFeature };
}

/** Makes the memory at least `bytes` long; false when it cannot grow. */
function reserve(k: Kernel, bytes: number): boolean {
  const have = k.memory.buffer.byteLength;
  if (bytes <= have) return true;
  try {
    k.memory.grow(Math.ceil((bytes - have) / WASM_PAGE));
  } catch {
    return false;
  }
  k.f64 = new Float64Array(k.memory.buffer);
  k.i32 = new Int32Array(k.memory.buffer);
  return true;
}

/**
 * Whether the kernel pays for a batch of n rows of this forest: two rows or more of the forest the
 * memory holds, or enough rows to pay for copying another forest in (about 10 ns a node, against
 * about 140 ns saved per row and tree on the sets of bench/RESULTS.md: n × trees ≥ nodes / 8).
 * One row is always left to predictForestWalk: its latency stays what it was, and a model scored one
 * row at a time never touches the kernel.
 */
export function kernelPays(forest: Forest, n: number): boolean {
  if (n < 2) return false;
  if (kernel && kernel.loaded?.deref() === forest) return true;
  return 8 * n * forest.treeRoot.length >= forest.feature.length;
}

/**
 * The forest's average output for the n rows of X (n x F) as n x K, bit for bit as predictForestWalk
 * gives it; null when the kernel is unavailable or cannot walk this forest (the caller walks it then).
 */
export function predictForestWasm(forest: Forest, X: Float64Array, n: number, F: number): Float64Array | null {
  const k = getKernel();
  if (!k) return null;
  const layout = forestLayout(forest);
  if (!layout || layout.maxFeature >= F) return null;
  const K = forest.nOutputs;
  const T = layout.roots.length;
  const rowBytes = 8 * F;
  const block = Math.max(LANES, Math.min(MAX_BLOCK_ROWS, Math.floor(BLOCK_BYTES / rowBytes)));
  const N = forest.feature.length;
  // after the leaf values: a block of rows and their sums, or (while a forest is copied in) its arrays
  const scratch = (layout.leaves + 8 * forest.leafValue.length + 63) & ~63;
  const xs = scratch;
  const sums = xs + block * rowBytes;
  const end = Math.max(sums + 8 * block * K, scratch + 16 * N);
  if (end > 2 ** 31 || !reserve(k, end)) return null;
  if (k.loaded?.deref() !== forest) {
    k.loaded = null;
    const thresholds = scratch;
    const features = thresholds + 8 * N;
    const lefts = features + 4 * N;
    k.f64.set(forest.threshold, thresholds >> 3);
    k.i32.set(forest.feature, features >> 2);
    k.i32.set(forest.left, lefts >> 2);
    k.f64.set(forest.leafValue, layout.leaves >> 3);
    k.build(N, features, thresholds, lefts, 8 * K, layout.leaves);
    k.loaded = new WeakRef(forest);
  }
  const [walkLanes, walkOne] = k.walks[K === 1 ? 1 : K === 2 ? 2 : 0];
  const { roots } = layout;
  const f64 = k.f64;
  const out = new Float64Array(n * K);
  for (let b0 = 0; b0 < n; b0 += block) {
    const m = Math.min(block, n - b0);
    f64.set(X.subarray(b0 * F, (b0 + m) * F), xs >> 3);
    f64.fill(0, sums >> 3, (sums >> 3) + m * K);
    const groups = Math.floor(m / LANES);
    const done = groups * LANES;
    for (let t = 0; t < T; t++) {
      walkLanes(roots[t], xs, groups, rowBytes, sums, K);
      if (done < m) walkOne(roots[t], xs + done * rowBytes, m - done, rowBytes, sums + 8 * done * K, K);
    }
    const s = sums >> 3;
    const o = b0 * K;
    for (let j = 0; j < m * K; j++) out[o + j] = f64[s + j] / T;
  }
  return out;
}
