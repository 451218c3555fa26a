import { AppError } from '../../../services/errors';
import { parseCsv, parseUploadedFile } from '../../../services/datasets';

describe('CSV ingestion', () => {
  it.each([
    [',', 'comma'],
    [';', 'semicolon'],
    ['\t', 'tab'],
    ['|', 'pipe'],
  ])('detects the %s (%s) separator, types numeric text and turns empty cells into null', (sep) => {
    const rows = parseCsv(['a', 'b', 'c'].join(sep) + '\n' + ['1', '', 'x'].join(sep) + '\n' + ['2.5', '3', ''].join(sep) + '\n');
    expect(rows).toEqual([
      { a: 1, b: null, c: 'x' },
      { a: 2.5, b: 3, c: null },
    ]);
  });

  it('keeps a quoted separator inside a value', () => {
    expect(parseCsv('name,city\n"Doe, J",Paris\n')).toEqual([{ name: 'Doe, J', city: 'Paris' }]);
  });

  it.each([
    ['an unterminated quote', 'a,b\n"1,2\n'],
    ['a row with too many fields', 'a,b\n1,2,3\n'],
    ['binary content', 'a,b\n\u0000\u0001,2\n'],
    ['a header without rows', 'a,b\n'],
    ['an empty file', '  \n'],
    ['a repeated column name', 'a,a\n1,2\n'],
  ])('refuses %s with CSV_UNREADABLE', (_label, text) => {
    expect(() => parseCsv(text)).toThrow(AppError);
    try {
      parseCsv(text);
    } catch (err) {
      expect((err as AppError).code).toBe('CSV_UNREADABLE');
      expect((err as AppError).status).toBe(400);
    }
  });

  it('reads a JSON file holding an array of rows or {"data": [...]}', () => {
    const rows = [{ a: 1 }, { a: 2 }];
    expect(parseUploadedFile({ name: 'x.json', mimetype: 'application/json', content: Buffer.from(JSON.stringify(rows)) })).toEqual(rows);
    expect(parseUploadedFile({ name: 'x.json', mimetype: null, content: Buffer.from(JSON.stringify({ data: rows })) })).toEqual(rows);
    expect(() => parseUploadedFile({ name: 'x.json', mimetype: null, content: Buffer.from('{"data": [[1]]}') })).toThrow(/row must be an object/);
  });
});
