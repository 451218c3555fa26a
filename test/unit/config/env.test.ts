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

describe('BILLING_RETURN_URL', () => {
  it("follows the console's address (PORT, PUBLIC_URL, FRONTEND_URL) unless set: a fixed port 3000 sent the checkout of a service on another port nowhere", () => {
    expect(loadConfig({ PORT: '3300' }).BILLING_RETURN_URL).toBe('http://127.0.0.1:3300/console/billing');
    expect(loadConfig({ PUBLIC_URL: 'https://api.example.com/' }).BILLING_RETURN_URL).toBe('https://api.example.com/console/billing');
    expect(loadConfig({ FRONTEND_URL: 'https://app.example.com/' }).BILLING_RETURN_URL).toBe('https://app.example.com/billing');
    expect(loadConfig({ PORT: '3300', BILLING_RETURN_URL: 'https://pay.example.com/back' }).BILLING_RETURN_URL).toBe('https://pay.example.com/back');
  });
});
