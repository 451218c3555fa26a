import { parseJsonBody } from '../../../services/json';

const refusal = (text: string) => {
  try {
    parseJsonBody(text);
    return null;
  } catch (err) {
    return (err as { code?: string }).code ?? 'thrown';
  }
};

describe('parseJsonBody', () => {
  it('parses ordinary JSON as JSON.parse does, escaped accents included', () => {
    const text = '{"a":[1,2.5e10,-3],"b":"caf\\u00e9","c":{"d":null,"e":true}}';
    expect(parseJsonBody(text)).toEqual(JSON.parse(text));
  });

  it.each([
    ['a NUL in a string', '{"a":"x\\u0000y"}'],
    ['a NUL in a key', '{"x\\u0000":1}'],
    ['a __proto__ key', '{"rows":[{"__proto__":{"admin":true}}]}'],
    ['a __proto__ key written with escapes', '{"\\u005f\\u005fproto\\u005f\\u005f":1}'],
    ['a number that overflows to Infinity', '{"a":1e999}'],
    ['a number that overflows to -Infinity', '{"a":[-1E+400]}'],
    ['a 400-digit integer', `{"a":${'9'.repeat(400)}}`],
  ])('refuses %s with VALIDATION_ERROR', (_label, text) => {
    expect(refusal(text)).toBe('VALIDATION_ERROR');
  });

  it('keeps large finite numbers and strings that only look like the refused ones', () => {
    expect(parseJsonBody('{"a":1e300,"b":"1e999","c":"__proto__","d":"\\\\u0000"}')).toEqual({ a: 1e300, b: '1e999', c: '__proto__', d: '\\u0000' });
  });

  it('answers INVALID_JSON for malformed text', () => {
    expect(refusal('{"a":')).toBe('INVALID_JSON');
  });
});
