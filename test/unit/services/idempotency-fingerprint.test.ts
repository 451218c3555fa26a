import { requestFingerprint } from '../../../services/idempotency';

const fingerprint = (body: unknown, path = '/v1/models/mdl_x/predict') => requestFingerprint({ method: 'POST', path, body });

describe('requestFingerprint', () => {
  test('the same body with its members in another order is the same call (a tenth probe: a retry rebuilt from a hash map was 422 IDEMPOTENCY_KEY_REUSED)', () => {
    const body = { rows: [{ age: 41, plan: 'pro', city: { name: 'Oslo', zip: '0150' } }, { age: 7, plan: 'free', city: null }] };
    const reordered = JSON.parse('{"rows":[{"city":{"zip":"0150","name":"Oslo"},"plan":"pro","age":41},{"plan":"free","city":null,"age":7}]}') as unknown;
    expect(fingerprint(reordered)).toBe(fingerprint(body));
    expect(fingerprint({ b: 1, a: 2, 10: 'x', 2: 'y' })).toBe(fingerprint({ 2: 'y', a: 2, 10: 'x', b: 1 }));
  });

  test('other values, another order of rows, another path or a member named __proto__ are other calls', () => {
    const body = { rows: [{ a: 1, b: 2 }, { a: 3, b: 4 }] };
    expect(fingerprint({ rows: [{ a: 1, b: 2 }, { a: 3, b: 5 }] })).not.toBe(fingerprint(body));
    expect(fingerprint({ rows: [{ a: 3, b: 4 }, { a: 1, b: 2 }] })).not.toBe(fingerprint(body));
    expect(fingerprint(body, '/v1/models/mdl_y/predict')).not.toBe(fingerprint(body));
    const withProto = JSON.parse('{"rows":[{"b":2,"__proto__":1}]}') as unknown;
    const withoutProto = JSON.parse('{"rows":[{"b":2}]}') as unknown;
    expect(fingerprint(withProto)).not.toBe(fingerprint(withoutProto));
    expect(fingerprint(withProto)).toBe(fingerprint(JSON.parse('{"rows":[{"__proto__":1,"b":2}]}')));
  });

  test('leaves the body it reads as it was', () => {
    const body = { rows: [{ z: 1, a: 2 }] };
    fingerprint(body);
    expect(Object.keys(body.rows[0]!)).toEqual(['z', 'a']);
  });
});
