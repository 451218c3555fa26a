import { WEBHOOKS } from '../../../config/webhooks';
import { retryAfterMs } from '../../../services/webhooks/delivery';

describe('retryAfterMs: a receiver\'s Retry-After read as a wait', () => {
  const now = Date.parse('2026-11-29T18:00:00Z');

  it('reads whole seconds and an HTTP date (IMF-fixdate) in the future, bounded by a day', () => {
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs(' 7 ', now)).toBe(7_000);
    expect(retryAfterMs('Sun, 29 Nov 2026 18:05:00 GMT', now)).toBe(300_000);
    expect(retryAfterMs('999999', now)).toBe(WEBHOOKS.maxRetryAfterMs);
  });

  it('asks for no wait of its own (null: the schedule applies) on 0, a date passed, or text that is neither (a twenty-third probe: -5, 1.5 and 0.5 were read as dates of 1970-2001 and a 0 spent the whole schedule in a second)', () => {
    for (const value of [null, '', '0', '-5', '1.5', '0.5', 'abc', 'Sun, 29 Nov 2026 17:00:00 GMT', '2026-11-29T18:05:00Z', 'Sunday, 29-Nov-26 18:05:00 GMT']) {
      expect([value, retryAfterMs(value, now)]).toEqual([value, null]);
    }
  });
});
