/**
 * Artefact serialisation: a JSON string (format "tabular-gbdt", `formatVersion` inside). Typed
 * arrays of the flat predictor are stored as base64 of their little-endian bytes, so floats
 * round-trip exactly and a reloaded model gives byte-identical predictions. Pure code: no Buffer.
 */
import { TabularModelFormatError } from './errors';
import type { TabularModel } from './model';
import type { FlatPredictor } from './predictor';
import type { LinearPart } from './linear';
import type { ForestPart } from './forest';
import type { GroupPart } from './group';
import type { KnnPart } from './knn';

export const ARTEFACT_FORMAT = 'tabular-gbdt';
/**
 * The artefact format of the current engine version's models, the newest this engine reads. Format 1:
 * the flat tree predictor (engines 1.0.0-5.0.0). Format 2 (engine 6.0.0): format 1 plus an optional
 * `linear` part (engine 6's linear member; absent when the blend gave it no weight). Format 3 (engines
 * 8.0.0 and 9.0.0): format 2 plus an optional `forest` part (their forest member; absent when the
 * mixture gave it no weight). Format 4 (engines 11.0.0-16.0.0): format 3 plus an optional `group` part (its
 * group member's lookup table; absent when the member was not kept). Format 5 (engine 17.0.0): format 4
 * plus an optional `knn` part (its k-nearest-neighbours member's stored rows; absent when the member
 * was not kept), so that an engine that cannot score that part refuses such a model instead of serving
 * it without the member. A model keeps the format it was trained in (`TabularModel.formatVersion`), so
 * an older model re-serialises exactly.
 */
export const ARTEFACT_FORMAT_VERSION = 5;

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64_INDEX = new Int16Array(128).fill(-1);
for (let i = 0; i < B64.length; i++) B64_INDEX[B64.charCodeAt(i)] = i;

export function bytesToBase64(bytes: Uint8Array): string {
  const parts: string[] = [];
  let chunk = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const a = bytes[i];
    const b = i + 1 < bytes.length ? bytes[i + 1] : 0;
    const c = i + 2 < bytes.length ? bytes[i + 2] : 0;
    const t = (a << 16) | (b << 8) | c;
    chunk += B64[(t >>> 18) & 63] + B64[(t >>> 12) & 63] + (i + 1 < bytes.length ? B64[(t >>> 6) & 63] : '=') + (i + 2 < bytes.length ? B64[t & 63] : '=');
    if (chunk.length >= 8192) {
      parts.push(chunk);
      chunk = '';
    }
  }
  parts.push(chunk);
  return parts.join('');
}

export function base64ToBytes(s: string): Uint8Array {
  if (s.length % 4 !== 0) throw new TabularModelFormatError('corrupt artefact: bad base64 length');
  let pad = 0;
  if (s.endsWith('==')) pad = 2;
  else if (s.endsWith('=')) pad = 1;
  const out = new Uint8Array((s.length / 4) * 3 - pad);
  let o = 0;
  for (let i = 0; i < s.length; i += 4) {
    const v = [0, 1, 2, 3].map((j) => {
      const ch = s.charCodeAt(i + j);
      if (s[i + j] === '=') return 0;
      const x = ch < 128 ? B64_INDEX[ch] : -1;
      if (x < 0) throw new TabularModelFormatError('corrupt artefact: bad base64 character');
      return x;
    });
    const t = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    if (o < out.length) out[o++] = (t >>> 16) & 255;
    if (o < out.length) out[o++] = (t >>> 8) & 255;
    if (o < out.length) out[o++] = t & 255;
  }
  return out;
}

type ArrayKind = 'f64' | 'i32' | 'u32' | 'u8';

function encodeArray(a: Float64Array | Int32Array | Uint32Array | Uint8Array): { kind: ArrayKind; data: string } {
  const bytes = new Uint8Array(a.length * a.BYTES_PER_ELEMENT);
  const dv = new DataView(bytes.buffer);
  let kind: ArrayKind;
  if (a instanceof Float64Array) {
    kind = 'f64';
    for (let i = 0; i < a.length; i++) dv.setFloat64(i * 8, a[i], true);
  } else if (a instanceof Int32Array) {
    kind = 'i32';
    for (let i = 0; i < a.length; i++) dv.setInt32(i * 4, a[i], true);
  } else if (a instanceof Uint32Array) {
    kind = 'u32';
    for (let i = 0; i < a.length; i++) dv.setUint32(i * 4, a[i], true);
  } else {
    kind = 'u8';
    bytes.set(a);
  }
  return { kind, data: bytesToBase64(bytes) };
}

function decodeArray(e: unknown, kind: ArrayKind): Float64Array | Int32Array | Uint32Array | Uint8Array {
  const o = e as { kind?: unknown; data?: unknown };
  if (!o || o.kind !== kind || typeof o.data !== 'string') throw new TabularModelFormatError('corrupt artefact: bad array');
  const bytes = base64ToBytes(o.data);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (kind) {
    case 'f64': {
      const a = new Float64Array(bytes.length / 8);
      for (let i = 0; i < a.length; i++) a[i] = dv.getFloat64(i * 8, true);
      return a;
    }
    case 'i32': {
      const a = new Int32Array(bytes.length / 4);
      for (let i = 0; i < a.length; i++) a[i] = dv.getInt32(i * 4, true);
      return a;
    }
    case 'u32': {
      const a = new Uint32Array(bytes.length / 4);
      for (let i = 0; i < a.length; i++) a[i] = dv.getUint32(i * 4, true);
      return a;
    }
    default:
      return bytes;
  }
}

/** The arrays of `spec` of a part, encoded by name. */
function encodeArrays<T>(part: T, spec: Array<[keyof T, ArrayKind]>): Record<string, { kind: ArrayKind; data: string }> {
  const arrays: Record<string, { kind: ArrayKind; data: string }> = {};
  for (const [name] of spec) arrays[name as string] = encodeArray(part[name] as unknown as Float64Array);
  return arrays;
}

/** The arrays of `spec` decoded from `arrays` into `into`, each checked for its kind. */
function decodeArrays<T>(arrays: Record<string, unknown>, spec: Array<[keyof T, ArrayKind]>, into: Record<string, unknown>): void {
  for (const [name, kind] of spec) into[name as string] = decodeArray(arrays[name as string], kind);
}

const ARRAYS: Array<[keyof FlatPredictor, ArrayKind]> = [
  ['init', 'f64'],
  ['treeRoot', 'i32'],
  ['treeOutput', 'i32'],
  ['nodeFeature', 'i32'],
  ['nodeThreshold', 'f64'],
  ['nodeLeft', 'i32'],
  ['nodeRight', 'i32'],
  ['nodeFlags', 'u8'],
  ['nodeCatStart', 'i32'],
  ['nodeCatLen', 'i32'],
  ['catBits', 'u32'],
  ['leafValue', 'f64'],
  ['nodeGain', 'f64'],
];

const LINEAR_ARRAYS: Array<[keyof LinearPart, ArrayKind]> = [
  ['numFill', 'f64'],
  ['numLo', 'f64'],
  ['numHi', 'f64'],
  ['numMean', 'f64'],
  ['numScale', 'f64'],
  ['termFeature', 'i32'],
  ['termKind', 'u8'],
  ['termValue', 'f64'],
  ['intercept', 'f64'],
  ['coef', 'f64'],
];

/** Weights as the little-endian bytes of a float64 (exact round trip, as the arrays). */
function encodeNumber(v: number): { kind: ArrayKind; data: string } {
  return encodeArray(Float64Array.of(v));
}

function decodeNumber(e: unknown): number {
  const a = decodeArray(e, 'f64');
  if (a.length !== 1) throw new TabularModelFormatError('corrupt artefact: bad number');
  return a[0];
}

function encodeLinear(l: LinearPart): Record<string, unknown> {
  return { nOutputs: l.nOutputs, treeWeight: encodeNumber(l.treeWeight), linearWeight: encodeNumber(l.linearWeight), arrays: encodeArrays(l, LINEAR_ARRAYS) };
}

function decodeLinear(e: unknown): LinearPart {
  const o = e as { nOutputs?: unknown; treeWeight?: unknown; linearWeight?: unknown; arrays?: Record<string, unknown> };
  if (!o || typeof o.nOutputs !== 'number' || !o.arrays) throw new TabularModelFormatError('corrupt artefact: linear part missing');
  const out: Record<string, unknown> = { nOutputs: o.nOutputs, treeWeight: decodeNumber(o.treeWeight), linearWeight: decodeNumber(o.linearWeight) };
  decodeArrays(o.arrays, LINEAR_ARRAYS, out);
  const l = out as unknown as LinearPart;
  if (l.termKind.length !== l.termFeature.length || l.termValue.length !== l.termFeature.length || l.intercept.length !== l.nOutputs || l.coef.length !== l.termFeature.length * l.nOutputs) {
    throw new TabularModelFormatError('corrupt artefact: bad linear part');
  }
  return l;
}

const FOREST_ARRAYS: Array<[keyof ForestPart, ArrayKind]> = [
  ['treeRoot', 'i32'],
  ['feature', 'i32'],
  ['threshold', 'f64'],
  ['left', 'i32'],
  ['right', 'i32'],
  ['leafValue', 'f64'],
];

function encodeForest(f: ForestPart): Record<string, unknown> {
  return { nOutputs: f.nOutputs, weight: encodeNumber(f.weight), arrays: encodeArrays(f, FOREST_ARRAYS) };
}

/** A forest part read back, its node references checked so that a walk cannot leave the arrays. */
function decodeForest(e: unknown, nFeatures: number): ForestPart {
  const o = e as { nOutputs?: unknown; weight?: unknown; arrays?: Record<string, unknown> };
  if (!o || typeof o.nOutputs !== 'number' || !o.arrays) throw new TabularModelFormatError('corrupt artefact: forest part missing');
  const out: Record<string, unknown> = { nOutputs: o.nOutputs, weight: decodeNumber(o.weight) };
  decodeArrays(o.arrays, FOREST_ARRAYS, out);
  const f = out as unknown as ForestPart;
  const nodes = f.feature.length;
  const leaves = f.leafValue.length / f.nOutputs;
  let ok = f.nOutputs >= 1 && Number.isInteger(leaves) && f.threshold.length === nodes && f.left.length === nodes && f.right.length === nodes && f.treeRoot.length > 0;
  for (let i = 0; ok && i < f.treeRoot.length; i++) ok = f.treeRoot[i] >= 0 && f.treeRoot[i] < nodes;
  for (let i = 0; ok && i < nodes; i++) {
    // children come after their parent, so every walk ends at a leaf
    ok = f.feature[i] < 0 ? f.left[i] >= 0 && f.left[i] < leaves : f.feature[i] < nFeatures && f.left[i] > i && f.left[i] < nodes && f.right[i] > i && f.right[i] < nodes;
  }
  if (!ok) throw new TabularModelFormatError('corrupt artefact: bad forest part');
  return f;
}

const GROUP_ARRAYS: Array<[keyof GroupPart, ArrayKind]> = [
  ['columns', 'i32'],
  ['values', 'f64'],
  ['valueStart', 'i32'],
  ['keys', 'i32'],
  ['sums', 'f64'],
  ['counts', 'f64'],
];

function encodeGroup(g: GroupPart): Record<string, unknown> {
  return { nOutputs: g.nOutputs, smooth: encodeNumber(g.smooth), weight: encodeNumber(g.weight), arrays: encodeArrays(g, GROUP_ARRAYS) };
}

/** A group part read back, its sizes and references checked so that a lookup cannot leave the arrays (nOutputs: the model's). */
function decodeGroup(e: unknown, nFeatures: number, nOutputs: number): GroupPart {
  const o = e as { nOutputs?: unknown; smooth?: unknown; weight?: unknown; arrays?: Record<string, unknown> };
  if (!o || typeof o.nOutputs !== 'number' || !o.arrays) throw new TabularModelFormatError('corrupt artefact: group part missing');
  const out: Record<string, unknown> = { nOutputs: o.nOutputs, smooth: decodeNumber(o.smooth), weight: decodeNumber(o.weight) };
  decodeArrays(o.arrays, GROUP_ARRAYS, out);
  const g = out as unknown as GroupPart;
  const L = g.columns.length;
  const K = g.nOutputs;
  let ok = K === nOutputs && L >= 1 && g.smooth > 0 && g.weight > 0 && g.weight <= 1 && g.valueStart.length === L + 1 && g.valueStart[0] === 0 && g.valueStart[L] === g.values.length;
  ok = ok && g.keys.length % L === 0 && g.sums.length === (g.keys.length / L) * K && g.counts.length === g.keys.length / L;
  for (let l = 0; ok && l < L; l++) ok = g.columns[l] >= 0 && g.columns[l] < nFeatures && g.valueStart[l + 1] >= g.valueStart[l];
  // every code names one of its column's values, and the keys ascend strictly (lookups are binary searches)
  for (let j = 0; ok && j < g.keys.length; j++) ok = g.keys[j] >= 0 && g.keys[j] < g.valueStart[(j % L) + 1] - g.valueStart[j % L];
  for (let j = L; ok && j < g.keys.length; j += L) {
    let d = 0;
    for (let l = 0; d === 0 && l < L; l++) d = g.keys[j + l] - g.keys[j - L + l];
    ok = d > 0;
  }
  if (!ok) throw new TabularModelFormatError('corrupt artefact: bad group part');
  return g;
}

const KNN_ARRAYS: Array<[keyof KnnPart, ArrayKind]> = [
  ['categorical', 'u8'],
  ['centre', 'f64'],
  ['scale', 'f64'],
  ['fill', 'f64'],
  ['Z', 'f64'],
  ['y', 'f64'],
];

function encodeKnn(k: KnnPart): Record<string, unknown> {
  return { n: k.n, nFeatures: k.nFeatures, k: k.k, floor: encodeNumber(k.floor), weight: encodeNumber(k.weight), arrays: encodeArrays(k, KNN_ARRAYS) };
}

/** A kNN part read back, its sizes checked (nFeatures: the model's). */
function decodeKnn(e: unknown, nFeatures: number): KnnPart {
  const o = e as { n?: unknown; nFeatures?: unknown; k?: unknown; floor?: unknown; weight?: unknown; arrays?: Record<string, unknown> };
  if (!o || typeof o.n !== 'number' || typeof o.nFeatures !== 'number' || typeof o.k !== 'number' || !o.arrays) throw new TabularModelFormatError('corrupt artefact: kNN part missing');
  const out: Record<string, unknown> = { n: o.n, nFeatures: o.nFeatures, k: o.k, floor: decodeNumber(o.floor), weight: decodeNumber(o.weight) };
  decodeArrays(o.arrays, KNN_ARRAYS, out);
  const k = out as unknown as KnnPart;
  const F = k.nFeatures;
  const ok = F === nFeatures && Number.isInteger(k.n) && k.n >= 1 && Number.isInteger(k.k) && k.k >= 1 && k.floor >= 0 && k.weight > 0 && k.weight <= 1 &&
    k.categorical.length === F && k.centre.length === F && k.scale.length === F && k.fill.length === F && k.Z.length === k.n * F && k.y.length === k.n;
  if (!ok) throw new TabularModelFormatError('corrupt artefact: bad kNN part');
  return k;
}

export function serialise(model: TabularModel): string {
  const arrays = encodeArrays(model.predictor, ARRAYS);
  return JSON.stringify({
    format: ARTEFACT_FORMAT,
    formatVersion: model.knn || model.formatVersion === 5 ? 5 : model.group || model.formatVersion === 4 ? 4 : model.forest || model.formatVersion === 3 ? 3 : model.linear || model.formatVersion === 2 ? 2 : 1,
    engine: model.engine,
    task: model.task,
    target: model.target,
    classes: model.classes,
    inputColumns: model.inputColumns,
    columns: model.columns,
    features: model.features,
    predictor: { nFeatures: model.predictor.nFeatures, nOutputs: model.predictor.nOutputs, arrays },
    ...(model.linear ? { linear: encodeLinear(model.linear) } : {}),
    ...(model.forest ? { forest: encodeForest(model.forest) } : {}),
    ...(model.group ? { group: encodeGroup(model.group) } : {}),
    ...(model.knn ? { knn: encodeKnn(model.knn) } : {}),
  });
}

export function deserialise(text: string): TabularModel {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new TabularModelFormatError('artefact is not valid JSON');
  }
  if (!o || o.format !== ARTEFACT_FORMAT) throw new TabularModelFormatError(`not a ${ARTEFACT_FORMAT} artefact`);
  if (o.formatVersion !== 1 && o.formatVersion !== 2 && o.formatVersion !== 3 && o.formatVersion !== 4 && o.formatVersion !== 5) {
    throw new TabularModelFormatError(`unknown artefact format version ${String(o.formatVersion)} (this engine reads ${ARTEFACT_FORMAT_VERSION})`);
  }
  const p = o.predictor as { nFeatures: number; nOutputs: number; arrays: Record<string, unknown> };
  if (!p || typeof p.nFeatures !== 'number' || typeof p.nOutputs !== 'number' || !p.arrays) {
    throw new TabularModelFormatError('corrupt artefact: predictor missing');
  }
  const pred: Record<string, unknown> = { nFeatures: p.nFeatures, nOutputs: p.nOutputs };
  decodeArrays(p.arrays, ARRAYS, pred);
  return {
    engine: o.engine as TabularModel['engine'],
    formatVersion: o.formatVersion,
    task: o.task as TabularModel['task'],
    target: o.target as string,
    classes: o.classes as TabularModel['classes'],
    inputColumns: o.inputColumns as string[],
    columns: o.columns as TabularModel['columns'],
    features: o.features as TabularModel['features'],
    predictor: pred as unknown as FlatPredictor,
    ...(o.formatVersion >= 2 && o.linear !== undefined ? { linear: decodeLinear(o.linear) } : {}),
    ...(o.formatVersion >= 3 && o.forest !== undefined ? { forest: decodeForest(o.forest, p.nFeatures) } : {}),
    ...(o.formatVersion >= 4 && o.group !== undefined ? { group: decodeGroup(o.group, p.nFeatures, Array.isArray(o.classes) ? o.classes.length : 1) } : {}),
    ...(o.formatVersion === 5 && o.knn !== undefined ? { knn: decodeKnn(o.knn, p.nFeatures) } : {}),
  };
}
