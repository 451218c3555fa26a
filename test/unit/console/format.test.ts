import { formatMetric } from '../../../console/src/lib/format';

describe('the console\'s trial metrics', () => {
  it('shows counts as counts, scores with four decimals, names without JSON quotes and flags as words', () => {
    expect(formatMetric(15)).toBe('15');
    expect(formatMetric(1200)).toBe('1,200');
    expect(formatMetric(0.25)).toBe('0.2500');
    expect(formatMetric('roc_auc')).toBe('roc_auc');
    expect(formatMetric(true)).toBe('yes');
    expect(formatMetric(null)).toBe('—');
    expect(formatMetric({ a: 1 })).toBe('{"a":1}');
  });
});
