import { ApiError } from '../../../console/src/api/errors';
import { RetryKey, newIdempotencyKey, retryable } from '../../../console/src/lib/idempotency';

describe('the console\'s Idempotency-Key per logical call', () => {
  const counter = () => {
    let n = 0;
    return () => `key-${++n}`;
  };

  it('reuses the key when the same call is retried after a lost answer, a 5xx or REQUEST_IN_PROGRESS', () => {
    const keys = new RetryKey(counter());
    expect(keys.keyFor('a')).toBe('key-1');
    keys.settle(ApiError.network(new TypeError('Failed to fetch')));
    expect(keys.keyFor('a')).toBe('key-1');
    keys.settle(new ApiError(503, 'CALL_EXPIRED', 'x'));
    expect(keys.keyFor('a')).toBe('key-1');
    keys.settle(new ApiError(409, 'REQUEST_IN_PROGRESS', 'x'));
    expect(keys.keyFor('a')).toBe('key-1');
  });

  it('takes a new key after a success, after a definitive refusal, and for other content', () => {
    const keys = new RetryKey(counter());
    expect(keys.keyFor('a')).toBe('key-1');
    keys.settle(null);
    expect(keys.keyFor('a')).toBe('key-2');
    keys.settle(new ApiError(402, 'CREDITS_EXHAUSTED', 'x'));
    expect(keys.keyFor('a')).toBe('key-3');
    keys.settle(ApiError.network(new TypeError('Failed to fetch')));
    expect(keys.keyFor('b')).toBe('key-4');
  });

  it('says which failures are worth a retry', () => {
    expect(retryable(new ApiError(429, 'RATE_LIMITED', 'x'))).toBe(true);
    expect(retryable(new ApiError(400, 'VALIDATION_ERROR', 'x'))).toBe(false);
    expect(retryable(new Error('x'))).toBe(false);
  });

  it('makes keys the service accepts (1–255 visible ASCII characters), also without crypto.randomUUID', () => {
    expect(newIdempotencyKey()).toMatch(/^[\x21-\x7e]{1,255}$/);
    const original = crypto.randomUUID;
    try {
      (crypto as { randomUUID?: unknown }).randomUUID = undefined;
      const key = newIdempotencyKey();
      expect(key).toMatch(/^[0-9a-f]{32}$/);
      expect(newIdempotencyKey()).not.toBe(key);
    } finally {
      crypto.randomUUID = original;
    }
  });
});
