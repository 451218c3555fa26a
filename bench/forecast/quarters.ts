/**
 * A further quarterly set for choosing the quarterly combination: the monthly series of M1 and M3
 * summed into quarters. Each training part is cut at its start to whole quarters (aligned on its last
 * month) and summed over three months; the test part's complete quarters (6 of M1's and M3's 18 test
 * months) are the horizon. Written in the collections' long CSV format, ids prefixed by the file.
 *
 *   tsx bench/forecast/quarters.ts --out .bench/exp/aggq.csv [--data FILE[,FILE]]
 */
import * as fs from 'node:fs';
import { parseArgs } from 'node:util';
import * as path from 'node:path';
import { readData } from './data';

const { values } = parseArgs({
  options: {
    data: { type: 'string', default: '../shared/data/forecast/m1.csv,../shared/data/forecast/m3.csv' },
    out: { type: 'string' },
  },
});
if (!values.out) throw new Error('--out is required');
const sum3 = (xs: number[]) => {
  const out: number[] = [];
  for (let i = 0; i + 3 <= xs.length; i += 3) out.push(xs[i] + xs[i + 1] + xs[i + 2]);
  return out;
};
const lines = ['series_id,period,type,horizon,start,split,t,value'];
for (const file of values.data.split(',')) {
  const name = path.basename(file, '.csv');
  for (const s of readData(file).filter((x) => x.period === 'MONTHLY')) {
    const train = sum3(s.train.slice(s.train.length % 3));
    const test = sum3(s.test);
    if (train.length < 10 || test.length === 0) continue;
    const id = `${name}-${s.id}`;
    train.forEach((v, i) => lines.push(`${id},QUARTERLY,X,${test.length},2000-01,train,${i + 1},${v}`));
    test.forEach((v, i) => lines.push(`${id},QUARTERLY,X,${test.length},2000-01,test,${train.length + i + 1},${v}`));
  }
}
fs.writeFileSync(values.out, lines.join('\n') + '\n');
console.error(`wrote ${values.out}: ${lines.length - 1} rows`);
