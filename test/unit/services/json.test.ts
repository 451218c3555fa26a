import { MAX_JSON_DEPTH, parseJsonBody } from '../../../services/json';

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
    ['a lone high surrogate in a string', '{"rows":[{"colour":"\\ud800"}]}'],
    ['a lone low surrogate in a string', '{"a":"x\\udc00y"}'],
    ['a low surrogate before its high one', '{"a":"\\udc00\\ud800"}'],
    ['a lone surrogate in a key', '{"co\\ud800lour":1}'],
    ['a __proto__ key', '{"rows":[{"__proto__":{"admin":true}}]}'],
    ['a __proto__ key written with escapes', '{"\\u005f\\u005fproto\\u005f\\u005f":1}'],
    ['a number that overflows to Infinity', '{"a":1e999}'],
    ['a number that overflows to -Infinity', '{"a":[-1E+400]}'],
    ['a 400-digit integer', `{"a":${'9'.repeat(400)}}`],
  ])('refuses %s with VALIDATION_ERROR', (_label, text) => {
    expect(refusal(text)).toBe('VALIDATION_ERROR');
  });

  it('keeps characters outside the basic plane, written as surrogate pairs or as UTF-8', () => {
    expect(parseJsonBody('{"a":"\\ud83d\\ude00","b":"😀","\\ud834\\udd1e":1}')).toEqual({ a: '😀', b: '😀', '𝄞': 1 });
  });

  it('keeps large finite numbers and strings that only look like the refused ones', () => {
    expect(parseJsonBody('{"a":1e300,"b":"1e999","c":"__proto__","d":"\\\\u0000"}')).toEqual({ a: 1e300, b: '1e999', c: '__proto__', d: '\\u0000' });
  });

  it('names the refused place wherever it is in a large body', () => {
    const rows = Array.from({ length: 5_000 }, (_, i) => ({ id: i, colour: 'red', size: i / 3 }));
    const at = (row: number, cell: string) => JSON.stringify({ rows }).replace(`{"id":${row},"colour":"red"`, `{"id":${row},${cell},"colour":"red"`);
    const detail = (text: string) => {
      try {
        parseJsonBody(text);
        return null;
      } catch (err) {
        return (err as { detail?: string }).detail ?? null;
      }
    };
    expect(detail(at(4_321, '"x\\u0000":1'))).toBe('Invalid body: the key "x\\u0000" holds a NUL character.');
    expect(detail(at(17, '"note":"a\\u0000b"'))).toBe('Invalid body: the value of "note" holds a NUL character.');
    expect(detail(at(4_999, '"size2":-1e400'))).toBe('Invalid body: the number of "size2" is out of range (not finite).');
    expect(detail(at(0, '"__proto__":{"admin":true}'))).toBe('Invalid body: the key "__proto__" is not allowed.');
    expect(detail(JSON.stringify({ rows }))).toBeNull();
  });

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels, even a million deep, and keeps a body exactly that deep`, () => {
    const nested = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
    expect(parseJsonBody(`{"a":${nested(MAX_JSON_DEPTH - 1)}}`)).toEqual({ a: JSON.parse(nested(MAX_JSON_DEPTH - 1)) });
    expect(refusal(`{"a":${nested(MAX_JSON_DEPTH)}}`)).toBe('VALIDATION_ERROR');
    expect(refusal(nested(1_000_000))).toBe('VALIDATION_ERROR');
  });

  it('answers INVALID_JSON for malformed text', () => {
    expect(refusal('{"a":')).toBe('INVALID_JSON');
  });
});
