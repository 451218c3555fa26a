import { rocAuc, rocAucByRanks } from '../../../engines/tabular/metrics';
import { Prng } from '../../../engines/tabular/prng';

describe('rocAuc', () => {
  it('counts a positive tied with a negative as half a pair ordered right', () => {
    // pairs (pos, neg): (0.8, 0.2) right, (0.8, 0.5) right, (0.5, 0.2) right, (0.5, 0.5) tied
    expect(rocAuc([1, 0, 1, 0], [0.8, 0.2, 0.5, 0.5])).toBe(3.5 / 4);
    expect(rocAuc([0, 0, 1, 1], [0.9, 0.8, 0.2, 0.1])).toBe(0);
    expect(rocAuc([1, 1, 1], [0.1, 0.2, 0.3])).toBeNaN();
  });

  it('equals the rank-sum formula bit for bit, ties and signed zeros included', () => {
    const rng = new Prng(7);
    for (let c = 0; c < 3000; c++) {
      const n = 2 + rng.nextInt(200);
      const levels = 1 + rng.nextInt(c % 3 === 0 ? 4 : 500);
      const y = Array.from({ length: n }, () => (rng.nextFloat() < 0.3 ? 1 : 0));
      const score = Array.from({ length: n }, () => (c % 5 === 0 ? (rng.nextFloat() < 0.5 ? -0 : 0) : Math.floor(rng.nextFloat() * levels) / levels - 0.3));
      expect(Object.is(rocAuc(y, score), rocAucByRanks(y, score))).toBe(true);
    }
  });

  it('takes the rank-sum path for scores holding NaN', () => {
    const y = [1, 0, 1, 0, 1];
    const score = [0.9, NaN, 0.4, 0.3, 0.7];
    expect(Object.is(rocAuc(y, score), rocAucByRanks(y, score))).toBe(true);
  });
});
