import { outcomesOf } from '../../../console/src/lib/outcomes';
import { parseCsv } from '../../../console/src/lib/csv';

const csv = (text: string) => ({ ...parseCsv(text), text, name: 'o.csv' });

describe('the console\'s outcomes CSV', () => {
  it('reports by request_id when the row has one, else by its features', () => {
    const { outcomes, problem } = outcomesOf(csv('x1,colour,request_id,actual\n1,red,req_a,yes\n2,blue,,no'), ['x1', 'colour']);
    expect(problem).toBeNull();
    expect(outcomes).toEqual([
      { request_id: 'req_a', actual: 'yes' },
      { features: { x1: 2, colour: 'blue' }, actual: 'no' },
    ]);
  });

  it('says what is missing: the actual column, an actual value, or a way to find the row', () => {
    expect(outcomesOf(csv('request_id,result\nreq_a,yes'), ['x1']).problem).toMatch(/“actual” column/);
    expect(outcomesOf(csv('request_id,actual\nreq_a,\nreq_b,no'), ['x1']).problem).toBe('Row 1 has no actual value.');
    expect(outcomesOf(csv('x1,actual\n1,yes'), ['x1', 'colour']).problem).toMatch(/missing: colour/);
    expect(outcomesOf(csv('request_id,actual\n,yes'), ['x1']).problem).toMatch(/Row 1 has no request_id/);
  });
});
