import { toCsv } from '../../../console/src/lib/csv';

describe('the console\'s predictions CSV', () => {
  it('neutralises text cells and column names a spreadsheet would run as formulas, quotes cells holding another separator (; tab |), and keeps numbers, negative ones included', () => {
    const csv = toCsv(['=cmd', 'x', 'prediction'], [
      { '=cmd': 'a', x: '-1.5', prediction: '=HYPERLINK("http://evil.example","x")' },
      { '=cmd': '@SUM(1)', x: -2, prediction: '+cmd|calc!A0' },
      { '=cmd': 'plain', x: '-', prediction: 'yes' },
      { '=cmd': 'a;=1+1', x: 'tab\there', prediction: 'no' },
    ]);
    expect(csv.split('\r\n')).toEqual([
      "'=cmd,x,prediction",
      'a,-1.5,"\'=HYPERLINK(""http://evil.example"",""x"")"',
      '\'@SUM(1),-2,"\'+cmd|calc!A0"',
      "plain,'-,yes",
      '"a;=1+1","tab\there",no',
    ]);
  });
});
