import { loadConfig, PURCHASE_SESSION_TTL_MIN_SECONDS } from '../../../config/env';

describe('PURCHASE_SESSION_TTL_SECONDS', () => {
  it("refuses at start-up a purchase session life Stripe would refuse (under 30 minutes, with a minute for the call), outside tests", () => {
    for (const NODE_ENV of ['production', 'development']) {
      for (const ttl of ['1', '60', '1800']) {
        expect(() => loadConfig({ NODE_ENV, PURCHASE_SESSION_TTL_SECONDS: ttl })).toThrow(/PURCHASE_SESSION_TTL_SECONDS is at least 1860/);
      }
      expect(loadConfig({ NODE_ENV, PURCHASE_SESSION_TTL_SECONDS: String(PURCHASE_SESSION_TTL_MIN_SECONDS) }).PURCHASE_SESSION_TTL_SECONDS).toBe(1860);
      expect(loadConfig({ NODE_ENV }).PURCHASE_SESSION_TTL_SECONDS).toBe(86_400);
      expect(() => loadConfig({ NODE_ENV, PURCHASE_SESSION_TTL_SECONDS: '86401' })).toThrow(/PURCHASE_SESSION_TTL_SECONDS/);
    }
  });

  it('accepts seconds in tests, whose Stripe stand-in expires sessions at once', () => {
    expect(loadConfig({ NODE_ENV: 'test', PURCHASE_SESSION_TTL_SECONDS: '2' }).PURCHASE_SESSION_TTL_SECONDS).toBe(2);
  });
});
