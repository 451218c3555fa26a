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
    [',', 'comma'],
    [';', 'semicolon'],
  ])('leaves out the nameless, valueless last column of a file whose every line ends with the %s (%s) separator', (sep) => {
    expect(parseCsv(`a${sep}b${sep}\n1${sep}x${sep}\n2${sep}y${sep}\n`)).toEqual([
      { a: 1, b: 'x' },
      { a: 2, b: 'y' },
    ]);
  });

  it.each([
    ['a nameless last column holding a value', 'a,b,\n1,2,\n3,4,5\n'],
    ['a nameless column before the last', 'a,,b\n1,,2\n'],
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

  it('reads a CSV with a UTF-16 byte order mark (Excel\'s "Unicode Text", tab-separated) as UTF-16: it was refused as "not text" for its NUL bytes (a thirteenth probe)', () => {
    const text = 'city\tsales\r\nZürich\t1,5\r\n東京\t2\r\n';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const be = Buffer.from(le);
    be.swap16();
    const expected = [
      { city: 'Zürich', sales: '1,5' },
      { city: '東京', sales: 2 },
    ];
    expect(parseUploadedFile({ name: 'export.txt', mimetype: 'text/plain', content: le })).toEqual(expected);
    expect(parseUploadedFile({ name: 'export.csv', mimetype: null, content: be })).toEqual(expected);
    // a mark followed by an odd number of bytes is not UTF-16
    expect(() => parseUploadedFile({ name: 'x.csv', mimetype: null, content: Buffer.concat([le, Buffer.from([0x41])]) })).toThrow(/not UTF-16 text/);
  });
});
