/**
 * Small seeded PRNG (sfc32 seeded through splitmix32). Deterministic across platforms;
 * the engine never uses Math.random.
 */
export class Prng {
  // int32 state in a typed array: plain number fields beyond 2^30 are boxed by V8, and the generator
  // draws one number per row per round for bagging (it was about a tenth of training time)
  private readonly s = new Int32Array(4);

  constructor(seed: number) {
    let s = (Math.floor(seed) >>> 0) ^ 0x9e3779b9;
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    for (let i = 0; i < 4; i++) this.s[i] = next();
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  nextUint32(): number {
    const s = this.s;
    const b = s[1];
    const c = s[2];
    const t = (s[0] + b + s[3]) | 0;
    s[3] = (s[3] + 1) | 0;
    s[0] = b ^ (b >>> 9);
    s[1] = (c + (c << 3)) | 0;
    s[2] = (((c << 21) | (c >>> 11)) + t) | 0;
    return t >>> 0;
  }

  /**
   * Bernoulli sample of 0..n-1: writes the kept indices to `out` and returns how many; row i is kept
   * when the i-th draw is below `fraction` (the same draws as n calls of nextFloat).
   */
  sampleIndices(out: Uint32Array, n: number, fraction: number): number {
    const limit = fraction * 4294967296;
    let m = 0;
    for (let i = 0; i < n; i++) {
      out[m] = i;
      m += this.nextUint32() < limit ? 1 : 0;
    }
    return m;
  }

  /** Uniform in [0, 1). */
  nextFloat(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  nextInt(n: number): number {
    return Math.floor(this.nextFloat() * n);
  }

  /** In-place Fisher-Yates shuffle. */
  shuffle<T extends { length: number; [i: number]: unknown }>(arr: T): T {
    for (let i = arr.length - 1; i > 0; i--) {
      const j = this.nextInt(i + 1);
      const tmp = arr[i];
      arr[i] = arr[j];
      arr[j] = tmp;
    }
    return arr;
  }

  /** Derive an independent generator seed. */
  fork(salt: number): number {
    return (this.nextUint32() ^ Math.imul(salt + 1, 0x27d4eb2d)) >>> 0;
  }
}
